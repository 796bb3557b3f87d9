# The man pages: conveyord(8), conveyord.toml(5), conveyorctl(1) and conveyor-doctor(8), from
# the templates in deploy/man. conveyor-gen-man, which links the option table
# (conveyor_config), writes the flags of conveyord(8) and every key of conveyord.toml(5);
# the other parts are written by hand. Built with `all` (target man_pages), compressed with
# gzip -9n, installed under share/man.
add_executable(conveyor-gen-man ${PROJECT_SOURCE_DIR}/deploy/man/gen_man.cpp)
target_link_libraries(conveyor-gen-man PRIVATE conveyor_config)

set(CONVEYOR_MAN_PAGES conveyord.8 conveyord.toml.5 conveyorctl.1)
if(TARGET conveyor-doctor)
  list(APPEND CONVEYOR_MAN_PAGES conveyor-doctor.8)
endif()
set(_man_outputs)
foreach(page ${CONVEYOR_MAN_PAGES})
  string(REGEX REPLACE ".*\\.([0-9])$" "\\1" section ${page})
  set(out ${CMAKE_BINARY_DIR}/man/${page})
  add_custom_command(
    OUTPUT ${out}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
    COMMAND conveyor-gen-man ${PROJECT_VERSION} ${PROJECT_SOURCE_DIR}/deploy/man/${page}.in ${out}
    COMMAND gzip -9nf ${out}
    DEPENDS conveyor-gen-man ${PROJECT_SOURCE_DIR}/deploy/man/${page}.in
    COMMENT "Man page ${page}"
    VERBATIM)
  list(APPEND _man_outputs ${out}.gz)
  install(FILES ${out}.gz DESTINATION share/man/man${section})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${_man_outputs})
