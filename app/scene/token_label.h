#pragma once
// A token as the charts write it. Newlines and tabs get a visible stand-in (↵, ⇥); bytes that
// are not a whole UTF-8 character (a token can hold half of "’") become their hex values,
// <E2 80>, which the chart explains under itself, instead of a "?" nobody can read.
#include <string>

namespace onegpu::app {

std::string token_label(const std::string& tok);

}  // namespace onegpu::app
