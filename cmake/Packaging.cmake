# Installation layout, the Debian package (`cpack -G DEB`, or the `package` target) and the
# portable bundle (`bundle` target). Only conveyord, conveyorctl, the unit, the config and
# the docs are installed; tests and benchmarks have no install rules.
if(NOT TARGET conveyord OR NOT TARGET conveyorctl)
  return()  # CONVEYOR_BUILD_DAEMON=OFF: nothing to package
endif()

# Debian 12 keeps package units in /lib/systemd/system; the config is a conffile in /etc.
set(CONVEYOR_UNIT_DIR "/lib/systemd/system" CACHE PATH "Where the systemd unit is installed")
set(CONVEYOR_CONFIG_DIR "/etc/conveyor" CACHE PATH "Where conveyord.toml is installed")
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/conveyord.service DESTINATION ${CONVEYOR_UNIT_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/deploy/conveyord.toml DESTINATION ${CONVEYOR_CONFIG_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/deploy/debian/copyright
        DESTINATION share/doc/conveyor)

# The flavour in the bundle's name: cpu (CONVEYOR_GPU=off), amd or nvidia.
if(CONVEYOR_GPU_FLAVOUR STREQUAL "off")
  set(CONVEYOR_FLAVOUR_NAME cpu)
else()
  set(CONVEYOR_FLAVOUR_NAME ${CONVEYOR_GPU_FLAVOUR})
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME conveyor)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Conveyor maintainers <maintainers@users.noreply.a-seed-caa55275.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU video transcode daemon (${CONVEYOR_FLAVOUR_NAME} flavour)")
set(CPACK_PACKAGE_DESCRIPTION "conveyord decodes video from gRPC clients with FFmpeg and encodes\nMotion-JPEG on one worker per GPU, or on the CPU. conveyorctl is its client.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # conveyor_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION video)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library Depends come from dpkg-shlibdeps; postinst needs adduser.
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
          ${PROJECT_SOURCE_DIR}/deploy/conveyord.toml
          ${PROJECT_SOURCE_DIR}/deploy/systemd/conveyord.service
  DEPENDS conveyord conveyorctl
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  COMMENT "Bundling ${CONVEYOR_BUNDLE_NAME}.tar.gz"
  VERBATIM)
