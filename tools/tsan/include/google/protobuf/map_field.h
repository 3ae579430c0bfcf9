// Under --config=tsan, stands in front of Debian's <google/protobuf/map_field.h>
// (//third_party:protobuf adds this directory to the include path).
//
// protobuf 3.21's map_field.h gives MapFieldBase two extra members (seq1_, seq2_)
// when __SANITIZE_THREAD__ is defined. Debian's libprotobuf.so is built without
// TSan, so code compiled with -fsanitize=thread would disagree with the library on
// the layout of every map field (protobuf.Struct, map<> fields in Weft's protos) and
// crash in generated or inline code. This reads Debian's header with
// __SANITIZE_THREAD__ undefined, so both sides agree; the rest of the translation
// unit still sees it. <cstddef> first, so libstdc++'s _GLIBCXX_TSAN (c++config.h) is
// decided with the macro still defined.
#ifndef WEFT_TOOLS_TSAN_PROTOBUF_MAP_FIELD_H_
#define WEFT_TOOLS_TSAN_PROTOBUF_MAP_FIELD_H_

#include <cstddef>

#pragma push_macro("__SANITIZE_THREAD__")
#undef __SANITIZE_THREAD__
#include_next <google/protobuf/map_field.h>
#pragma pop_macro("__SANITIZE_THREAD__")

#endif  // WEFT_TOOLS_TSAN_PROTOBUF_MAP_FIELD_H_
