#include "datapath/collectives/context.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::datapath::collectives_internal {

Scratch::~Scratch() {
  if (data_ != nullptr) {
    (void)transport_->UnregisterMemory(data_);
    std::free(data_);
  }
}

absl::StatusOr<char*> Scratch::Get(size_t num_bytes) {
  if (num_bytes <= capacity_) return data_;
  size_t capacity = std::max<size_t>({num_bytes, capacity_ * 2, 64 << 10});
  capacity = (capacity + 4095) & ~size_t{4095};
  if (data_ != nullptr) {
    RETURN_IF_ERROR(transport_->UnregisterMemory(data_));
    std::free(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  char* data = static_cast<char*>(std::aligned_alloc(4096, capacity));
  if (data == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", capacity, " bytes of collective scratch space"));
  }
  absl::Status registered = transport_->RegisterMemory(data, capacity);
  if (!registered.ok()) {
    std::free(data);
    return registered;
  }
  data_ = data;
  capacity_ = capacity;
  return data_;
}

Context::Context(Transport& transport, size_t segment_bytes, size_t ring_window,
                 size_t alltoall_bytes_in_flight)
    : transport(transport),
      rank(transport.rank()),
      size(transport.size()),
      segment_bytes(segment_bytes),
      ring_window(ring_window),
      alltoall_bytes_in_flight(alltoall_bytes_in_flight),
      recv_scratch(&transport),
      send_scratch(&transport),
      accumulate_scratch(&transport),
      fusion_scratch(&transport) {}

void Context::CopyWhileProgressing(char* dst, const char* src, size_t num_bytes) {
  // A piece at a time, so the sockets keep being served between pieces.
  constexpr size_t kPiece = 256 << 10;
  for (size_t done = 0; done < num_bytes; done += kPiece) {
    std::memcpy(dst + done, src + done, std::min(kPiece, num_bytes - done));
    transport.Progress();
  }
}

}  // namespace weft::datapath::collectives_internal
