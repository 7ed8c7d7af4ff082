# Generates the C++ source that embeds every sim/scenarios/*.yaml into the simulator library.
# Run at build time by sim/CMakeLists.txt:
#   cmake -DSCENARIO_DIR=<dir> -DOUTPUT=<file.cc> -P embed_scenarios.cmake
# Each scenario's name is its file name without ".yaml"; the text is kept verbatim as a raw string.
cmake_minimum_required(VERSION 3.25)

if(NOT SCENARIO_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "embed_scenarios.cmake: pass -DSCENARIO_DIR=... -DOUTPUT=...")
endif()

file(GLOB files "${SCENARIO_DIR}/*.yaml")  # sorted lexicographically
if(NOT files)
  message(FATAL_ERROR "embed_scenarios.cmake: no *.yaml in ${SCENARIO_DIR}")
endif()

set(delim "gpulse_yaml")
set(body "")
foreach(file IN LISTS files)
  get_filename_component(name "${file}" NAME_WE)
  if(NOT name MATCHES "^[A-Za-z0-9._-]+$")
    message(FATAL_ERROR "embed_scenarios.cmake: scenario file name '${name}' must be [A-Za-z0-9._-]")
  endif()
  file(READ "${file}" text)
  string(FIND "${text}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "embed_scenarios.cmake: ${file} contains the raw-string delimiter")
  endif()
  string(APPEND body "    {\"${name}\", R\"${delim}(${text})${delim}\"},\n")
endforeach()

set(out "// Generated from sim/scenarios/*.yaml by sim/embed_scenarios.cmake. Do not edit.\n")
string(APPEND out "#include \"builtin_scenarios.h\"\n\n")
string(APPEND out "namespace gpulse::sim {\nnamespace {\n\n")
string(APPEND out "constexpr BuiltinScenario kBuiltins[] = {\n${body}};\n\n")
string(APPEND out "}  // namespace\n\n")
string(APPEND out "std::span<const BuiltinScenario> BuiltinScenarios() { return kBuiltins; }\n\n")
string(APPEND out "}  // namespace gpulse::sim\n")

file(WRITE "${OUTPUT}" "${out}")
