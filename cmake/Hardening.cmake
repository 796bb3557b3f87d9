# Release builds, which the Debian package and the portable bundle are made from, are
# hardened as dpkg-buildflags does with hardening=+fortify,+bindnow: _FORTIFY_SOURCE=2
# (checked variants of the string and memory functions where the size is known) and full
# RELRO (relocations resolved at start, then the GOT read-only). Debian's g++ already
# builds PIE. Only Release: the sanitizer builds (RelWithDebInfo) keep their own
# interceptors, which _FORTIFY_SOURCE would bypass.
option(CONVEYOR_HARDENING "Release builds: -D_FORTIFY_SOURCE=2 and -z relro -z now" ON)
if(CONVEYOR_HARDENING)
  add_compile_options($<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:C,CXX>>:-D_FORTIFY_SOURCE=2>)
  add_link_options($<$<CONFIG:Release>:LINKER:-z,relro,-z,now>)
endif()
