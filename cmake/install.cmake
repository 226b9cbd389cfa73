# `cmake --install <build> --prefix <P>`: the public headers, the library
# (shared and static), the gelu-fusion program, a CMake package
# (find_package(gelu_fusion CONFIG)) and pkg-config files. The reference,
# the tests and the tools' code stay out of the installed library.
#
#   <P>/include/gelu/*.hpp
#   <P>/lib/libgelu_fusion.so.X.Y.Z, .so.X.Y (SONAME), .so; libgelu_fusion.a
#   <P>/bin/gelu-fusion
#   <P>/lib/cmake/gelu_fusion/gelu_fusionConfig.cmake, ...ConfigVersion.cmake,
#                             gelu_fusionTargets*.cmake
#   <P>/lib/pkgconfig/gelu_fusion.pc (shared), gelu_fusion_static.pc
#
# (lib is GNUInstallDirs' CMAKE_INSTALL_LIBDIR: lib/x86_64-linux-gnu when
# the prefix is /usr on Debian.)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(GELU_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gelu_fusion)

target_include_directories(gelu_fusion INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_include_directories(gelu_fusion_shared INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# Exported as gelu::gelu_fusion_static and gelu::gelu_fusion_shared;
# gelu_fusionConfig.cmake adds gelu::gelu_fusion (the shared one).
set_target_properties(gelu_fusion PROPERTIES EXPORT_NAME gelu_fusion_static)
set_target_properties(gelu_fusion_shared PROPERTIES EXPORT_NAME gelu_fusion_shared)

install(TARGETS gelu_fusion gelu_fusion_shared EXPORT gelu_fusionTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gelu
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp")
if(TARGET gelu-fusion)
  install(TARGETS gelu-fusion RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The CMake package. The static library's link dependencies (Highway,
# OpenMP) are exported as $<LINK_ONLY:...>; the config finds them.
install(EXPORT gelu_fusionTargets NAMESPACE gelu::
  DESTINATION ${GELU_CMAKE_DIR})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/gelu_fusionConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gelu_fusionConfig.cmake
  INSTALL_DESTINATION ${GELU_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/gelu_fusionConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)  # as the SONAME: 0.x minors differ in ABI
install(FILES
  ${PROJECT_BINARY_DIR}/gelu_fusionConfig.cmake
  ${PROJECT_BINARY_DIR}/gelu_fusionConfigVersion.cmake
  DESTINATION ${GELU_CMAKE_DIR})

# pkg-config. The prefix is only known at install time (--prefix), so the
# .pc files are written then, with absolute paths.
foreach(pc gelu_fusion gelu_fusion_static)
  install(CODE "
    set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
    set(libdir \"${CMAKE_INSTALL_LIBDIR}\")
    set(includedir \"${CMAKE_INSTALL_INCLUDEDIR}\")
    set(PROJECT_VERSION \"${PROJECT_VERSION}\")
    configure_file(\"${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in\"
                   \"${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc\" @ONLY)")
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
