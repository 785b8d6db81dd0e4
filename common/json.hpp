/// \file json.hpp
/// \brief The one JSON helper the checkers need: quoting a string.
///
/// Hand-written on purpose: the checkers' results are a handful of flat one-line objects (see
/// checker_main.cpp), built around this single function. nlohmann-json would write them no
/// shorter and would make one more library a dependency of every checker a student builds.
#pragma once

#include <string>

namespace workbook {

/// \brief Quotes text as a JSON string, escaping quotes, backslashes and control characters.
/// \param text any bytes; invalid UTF-8 is passed through, control bytes become \\u00XX
/// \snippet grading/tests/test_grading.cpp json
std::string json_quote(const std::string& text);

}  // namespace workbook
