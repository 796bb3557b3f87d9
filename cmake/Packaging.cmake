# Installation layout, the Debian package (`cpack -G DEB`, or the `package` target) and the
# portable bundle (`bundle` target). Only conveyord, conveyorctl, conveyor-doctor, their man
# pages, the unit, the config and the docs are installed; tests and benchmarks have no
# install rules.
if(NOT TARGET conveyord OR NOT TARGET conveyorctl)
  return()  # CONVEYOR_BUILD_DAEMON=OFF: nothing to package
endif()

# The flavour in the package's and the bundle's name: cpu (CONVEYOR_GPU=off), amd or nvidia.
if(CONVEYOR_GPU_FLAVOUR STREQUAL "off")
  set(CONVEYOR_FLAVOUR_NAME cpu)
else()
  set(CONVEYOR_FLAVOUR_NAME ${CONVEYOR_GPU_FLAVOUR})
endif()
# Each flavour is a package of its own (conveyor-cpu, conveyor-amd, conveyor-nvidia), so that
# an apt repository holds all three. They ship the same paths: each Provides and Conflicts
# with the virtual package conveyor (the pattern of mail-transport-agent), and Replaces the
# other two by name (dpkg lets a package take over files, and remove a package it conflicts
# with, only where Replaces names that package) and the package conveyor of earlier
# versions. Installing one flavour removes another.
set(CONVEYOR_PACKAGE_NAME conveyor-${CONVEYOR_FLAVOUR_NAME})
set(_other_flavours conveyor-cpu conveyor-amd conveyor-nvidia)
list(REMOVE_ITEM _other_flavours ${CONVEYOR_PACKAGE_NAME})
list(JOIN _other_flavours ", " _other_flavours)
set(CONVEYOR_DOC_DIR share/doc/${CONVEYOR_PACKAGE_NAME})

# Debian 12 keeps package units in /lib/systemd/system; the config is a conffile in /etc.
set(CONVEYOR_UNIT_DIR "/lib/systemd/system" CACHE PATH "Where the systemd unit is installed")
set(CONVEYOR_CONFIG_DIR "/etc/conveyor" CACHE PATH "Where conveyord.toml is installed")
if(TARGET conveyor-doctor)
  install(TARGETS conveyor-doctor RUNTIME DESTINATION bin)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/conveyord.service DESTINATION ${CONVEYOR_UNIT_DIR})
# The config the package ships. A GPU flavour's says workers = "gpu": on a host installed for
# its GPU, a daemon that cannot open it stops at start with the reason, rather than serve on
# the CPU at a tenth of the rate (workers = "auto" still falls back, loudly).
set(CONVEYOR_SHIPPED_CONFIG ${PROJECT_SOURCE_DIR}/deploy/conveyord.toml)
if(NOT CONVEYOR_FLAVOUR_NAME STREQUAL "cpu")
  file(READ ${CONVEYOR_SHIPPED_CONFIG} _config_text)
  string(REPLACE "\nworkers = \"auto\"\n" "\nworkers = \"gpu\"\n" _gpu_config_text "${_config_text}")
  if(_gpu_config_text STREQUAL _config_text)
    message(FATAL_ERROR "deploy/conveyord.toml has no line 'workers = \"auto\"' to ship as \"gpu\" in "
                        "the ${CONVEYOR_FLAVOUR_NAME} package")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CONVEYOR_SHIPPED_CONFIG})
  set(CONVEYOR_SHIPPED_CONFIG ${CMAKE_BINARY_DIR}/deploy/conveyord.toml)
  file(WRITE ${CONVEYOR_SHIPPED_CONFIG} "${_gpu_config_text}")
endif()
install(FILES ${CONVEYOR_SHIPPED_CONFIG} DESTINATION ${CONVEYOR_CONFIG_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/deploy/debian/copyright
        DESTINATION ${CONVEYOR_DOC_DIR})

# Man pages (cmake/ManPages.cmake) and the Debian changelog, compressed as Debian wants
# them: gzip -9n, so that the same sources give the same bytes.
include(${CMAKE_CURRENT_LIST_DIR}/ManPages.cmake)
set(_changelog ${CMAKE_BINARY_DIR}/debian/changelog)
add_custom_command(
  OUTPUT ${_changelog}.gz
  COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_SOURCE_DIR}/deploy/debian/changelog ${_changelog}
  COMMAND gzip -9nf ${_changelog}
  DEPENDS ${PROJECT_SOURCE_DIR}/deploy/debian/changelog
  COMMENT "Compressing the Debian changelog"
  VERBATIM)
add_custom_target(debian_changelog ALL DEPENDS ${_changelog}.gz)
install(FILES ${_changelog}.gz DESTINATION ${CONVEYOR_DOC_DIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ${CONVEYOR_PACKAGE_NAME})
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Conveyor maintainers <maintainers@users.noreply.a-seed-caa55275.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU video transcode daemon (${CONVEYOR_FLAVOUR_NAME} flavour)")
set(CPACK_PACKAGE_DESCRIPTION "conveyord decodes video from gRPC clients with FFmpeg and encodes\nMotion-JPEG on one worker per GPU, or on the CPU. conveyorctl is its client,\nconveyor-doctor checks the host's GPU.\n\nThis is the ${CONVEYOR_FLAVOUR_NAME} flavour. Each of conveyor-cpu, conveyor-amd and\nconveyor-nvidia replaces the others.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # conveyor-<flavour>_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SOURCE conveyor)  # the changelog's
set(CPACK_DEBIAN_PACKAGE_SECTION video)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_PROVIDES conveyor)
set(CPACK_DEBIAN_PACKAGE_CONFLICTS conveyor)
set(CPACK_DEBIAN_PACKAGE_REPLACES "conveyor, ${_other_flavours}")
# Library Depends come from dpkg-shlibdeps; postinst needs adduser. deb-systemd-helper and
# deb-systemd-invoke come from init-system-helpers, which is Essential.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)  # 0755 scripts, 0644 conffiles
include(CPack)

# The portable bundle: the binaries, their non-base shared libraries and launchers, for a
# host without Debian's FFmpeg and gRPC (deploy/bundle/make-bundle.sh).
set(CONVEYOR_BUNDLE_NAME conveyor-bundle-${PROJECT_VERSION}-${CONVEYOR_FLAVOUR_NAME}-x86_64)
add_custom_target(bundle
  COMMAND ${PROJECT_SOURCE_DIR}/deploy/bundle/make-bundle.sh
          ${CMAKE_BINARY_DIR}/${CONVEYOR_BUNDLE_NAME}.tar.gz
          $<TARGET_FILE:conveyord> $<TARGET_FILE:conveyorctl>
          ${CONVEYOR_SHIPPED_CONFIG}
          ${PROJECT_SOURCE_DIR}/deploy/systemd/conveyord.service
  DEPENDS conveyord conveyorctl
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  COMMENT "Bundling ${CONVEYOR_BUNDLE_NAME}.tar.gz"
  VERBATIM)
