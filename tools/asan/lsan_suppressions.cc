// LeakSanitizer suppressions linked into every binary built with --config=asan
// (.bazelrc: --custom_malloc=//tools/asan:lsan_suppressions).
//
// libcrypto: gRPC (not built with ASan) parses peer and own certificates with OpenSSL
// on its own threads; when a test process exits while a TLS handshake or a certificate
// watcher's refresh is still in flight, those X509 objects are still held and LSan
// reports them. The report is intermittent, its stack ends inside libcrypto (no frame
// pointers there, so no caller is known), and Weft's own X509/BIO use
// (security/credentials.cc, security/identity.cc) owns every object with a unique_ptr.
// Never add Weft's own functions here: fix the leak instead.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libcrypto.so.3\n";
}
