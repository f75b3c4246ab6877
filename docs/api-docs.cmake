# SPDX-License-Identifier: MIT
#
# Builds the API reference and fails when a public declaration has no
# documentation. Run by the `docs` target and the `api_docs` test:
#
#   cmake -DDOXYGEN=/usr/bin/doxygen -DDOXYFILE=<build>/docs/Doxyfile \
#         -DOUT=<build>/docs -P docs/api-docs.cmake
#
# DOXYFILE is docs/Doxyfile.in as configured by CMake: it writes HTML to
# OUT/html, XML to OUT/xml and every warning to OUT/warnings.log. Fails when
#   - doxygen exits non-zero (WARN_AS_ERROR = FAIL_ON_WARNINGS: any warning,
#     an undocumented declaration among them), or
#   - the warning log is not empty, or
#   - an enumerator has no comment: Doxygen 1.9.4 (Debian 12) has no warning
#     for those (WARN_IF_UNDOC_ENUM_VAL came later), so the XML output is
#     searched for enumvalue elements with empty descriptions.

foreach(var DOXYGEN DOXYFILE OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "api-docs.cmake: -D${var}=... is required")
  endif()
endforeach()

# Outputs of an earlier run would hide a header that no longer produces them.
file(REMOVE_RECURSE "${OUT}/html" "${OUT}/xml")
file(REMOVE "${OUT}/warnings.log")
file(MAKE_DIRECTORY "${OUT}")

execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}"
                WORKING_DIRECTORY "${OUT}"
                RESULT_VARIABLE doxygen_rc
                OUTPUT_VARIABLE doxygen_out
                ERROR_VARIABLE doxygen_err)

set(problems 0)

if(EXISTS "${OUT}/warnings.log")
  file(STRINGS "${OUT}/warnings.log" warnings)
else()
  set(warnings "")
endif()
list(LENGTH warnings nwarnings)
if(nwarnings GREATER 0)
  list(JOIN warnings "\n" text)
  message("${text}")
  math(EXPR problems "${problems} + ${nwarnings}")
endif()

if(NOT doxygen_rc EQUAL 0)
  message("${doxygen_out}${doxygen_err}")
  if(nwarnings EQUAL 0)
    # Failed without a warning to show for it (it did not start, or crashed).
    message("api-docs: ${DOXYGEN} exited with ${doxygen_rc}")
    math(EXPR problems "${problems} + 1")
  endif()
endif()

# Enumerators without a comment: <enumvalue> with an empty brief and
# detailed description (an initializer may come between).
set(ws "[ \t\r\n]*")
set(undoc_enumvalue
    "<enumvalue id=\"[^\"]*\" prot=\"public\">${ws}<name>([^<]*)</name>(${ws}<initializer>[^<]*</initializer>)?${ws}<briefdescription>${ws}</briefdescription>${ws}<detaileddescription>${ws}</detaileddescription>")
file(GLOB xml_files "${OUT}/xml/*.xml")
set(nenumvalues 0)
foreach(xml IN LISTS xml_files)
  file(READ "${xml}" content)
  # A ';' (from an entity such as &lt;) would split the list of matches.
  string(REPLACE ";" "," content "${content}")
  string(REGEX MATCHALL "<enumvalue " all "${content}")
  list(LENGTH all n)
  math(EXPR nenumvalues "${nenumvalues} + ${n}")
  string(REGEX MATCHALL "${undoc_enumvalue}" found "${content}")
  if(NOT found)
    continue()
  endif()
  string(REGEX MATCH "<location file=\"([^\"]*)\"" location "${content}")
  set(where "${CMAKE_MATCH_1}")
  foreach(match IN LISTS found)
    string(REGEX MATCH "<name>([^<]*)</name>" name "${match}")
    message("${where}: enumerator ${CMAKE_MATCH_1} is not documented.")
    math(EXPR problems "${problems} + 1")
  endforeach()
endforeach()

if(problems GREATER 0)
  message(FATAL_ERROR "api-docs: ${problems} problem(s) in the public headers' documentation "
                      "(see above); every public declaration needs a /** */ or /**< */ comment")
endif()
if(NOT xml_files)
  message(FATAL_ERROR "api-docs: doxygen wrote no XML to ${OUT}/xml")
endif()
message(STATUS "api-docs: no warnings, ${nenumvalues} enumerators documented; "
               "HTML in ${OUT}/html/index.html")
