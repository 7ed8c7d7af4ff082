# The install tree (issue 41, item 1; `cmake --install build --prefix P`):
#   P/bin/gpulse                        stripped (the build tree's binary keeps its debug info)
#   P/lib/gpulse/libgpulse-nvml-sim.so  where the installed gpulse looks for the simulator
#                                       (src/gpu/simulator.cc: next to itself, then ../lib/gpulse)
#   P/etc/gpulse/default-counters.csv   (/etc/gpulse when P is /usr)
#   P/etc/gpulse/web.yml                the web config example (configures nothing as shipped)
#   P/lib/systemd/system/*.service      the units of deploy/systemd with the paths of this install
#   P/share/man/man1/gpulse*.1.gz       gpulse(1) and one page per subcommand (src/cli/man_pages.h)
#   P/share/bash-completion/completions/gpulse   subcommands and flags (src/cli/completion.h)
# The prefix is the one given at install time, so the paths are written when installing.
# Included after src/ and sim/; the strip is switched on before them (CMakeLists.txt).

install(TARGETS gpulse_nvml_sim LIBRARY DESTINATION lib/gpulse)
install(DIRECTORY ${GPULSE_MAN_DIR}/ DESTINATION share/man/man1 FILES_MATCHING PATTERN "*.1.gz")
install(FILES ${GPULSE_MAN_DIR}/gpulse.bash DESTINATION share/bash-completion/completions RENAME gpulse)

install(CODE "set(GPULSE_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")\nset(GPULSE_BINARY_DIR \"${PROJECT_BINARY_DIR}\")")
install(CODE [[
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(gpulse_etc "/etc/gpulse")
  else()
    set(gpulse_etc "${CMAKE_INSTALL_PREFIX}/etc/gpulse")
  endif()
  file(INSTALL "${GPULSE_SOURCE_DIR}/deploy/default-counters.csv" "${GPULSE_SOURCE_DIR}/deploy/web.yml"
       DESTINATION "${gpulse_etc}")
  foreach(unit gpulse-exporter.service gpulse-agent.service)
    file(READ "${GPULSE_SOURCE_DIR}/deploy/systemd/${unit}" text)
    string(REPLACE "/usr/local/bin/gpulse" "${CMAKE_INSTALL_PREFIX}/bin/gpulse" text "${text}")
    string(REPLACE "/etc/gpulse/" "${gpulse_etc}/" text "${text}")
    file(WRITE "${GPULSE_BINARY_DIR}/install-units/${unit}" "${text}")
    file(INSTALL "${GPULSE_BINARY_DIR}/install-units/${unit}"
         DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
  endforeach()
]])
