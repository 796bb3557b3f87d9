// Points ThreadSanitizer at tests/session/tsan.supp (FFmpeg's uninstrumented reference
// counting), so the suppressions apply however the test is started, and TSAN_OPTIONS
// from the environment (halt_on_error=1 in tests/run.sh) still adds to them. Unused in
// builds without TSan.
extern "C" const char* __tsan_default_options() { return "suppressions=" CONVEYOR_SESSION_TSAN_SUPPRESSIONS; }
