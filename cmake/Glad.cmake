# Generates an OpenGL 3.3 core loader with Debian's python3-glad at build time (offline:
# --reproducible makes glad use its bundled gl.xml instead of downloading the spec).
find_program(GLAD_EXECUTABLE glad PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT GLAD_EXECUTABLE)
  find_program(GLAD_EXECUTABLE glad)
endif()
if(NOT GLAD_EXECUTABLE)
  message(FATAL_ERROR "glad not found: install python3-glad (scripts/deps does this)")
endif()
set(GLAD_OUT ${CMAKE_BINARY_DIR}/glad)
add_custom_command(
  OUTPUT ${GLAD_OUT}/src/gl.c ${GLAD_OUT}/include/glad/gl.h
  COMMAND ${GLAD_EXECUTABLE} --api gl:core=3.3 --extensions=GL_KHR_debug
          --out-path ${GLAD_OUT} --reproducible --quiet c
  COMMENT "Generating the OpenGL 3.3 core loader with glad"
  VERBATIM)
add_library(onegpu_glad STATIC ${GLAD_OUT}/src/gl.c)
target_include_directories(onegpu_glad PUBLIC ${GLAD_OUT}/include)
set_target_properties(onegpu_glad PROPERTIES POSITION_INDEPENDENT_CODE ON)
