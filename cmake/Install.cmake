# Installation: the library, the public header, cfxrun, a CMake package (Conflux::conflux) and a
# pkg-config file.
include(CMakePackageConfigHelpers)

set(CFX_INSTALL_TARGETS conflux conflux_train)
if(CFX_BUILD_STATIC)
  list(APPEND CFX_INSTALL_TARGETS conflux_static)
endif()
install(TARGETS ${CFX_INSTALL_TARGETS} EXPORT ConfluxTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/conflux)
install(DIRECTORY train/include/conflux/train DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/conflux)
install(TARGETS cfxrun cfx-topo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS tools/cfx-doctor DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT ConfluxTargets NAMESPACE Conflux:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Conflux)

configure_package_config_file(cmake/ConfluxConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/ConfluxConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Conflux)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ConfluxConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ConfluxConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/ConfluxConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Conflux)

# Relocatable: the prefix is found relative to the .pc file, so `cmake --install --prefix X` works.
file(RELATIVE_PATH CFX_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(cmake/conflux.pc.in ${CMAKE_CURRENT_BINARY_DIR}/conflux.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/conflux.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
