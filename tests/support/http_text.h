// Text helpers of the tests' HTTP servers (tests/s3/http_test_server.cc and the S3 fault
// proxy, tests/support/s3_fault_proxy.cc): header names compared in lower case, header
// values without surrounding blanks.
#pragma once

#include <string>

namespace stripeback::testing {

inline std::string http_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

// Without leading blanks and trailing blanks or line ends.
inline std::string http_trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace stripeback::testing
