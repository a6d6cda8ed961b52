# Request signing (AWS Signature Version 4) and the S3 protocol's messages (the XML bodies
# sent and parsed): pure code, no network; the HTTP part (http.cmake) builds on it.
add_library(stripeback_s3_sign STATIC
  ${CMAKE_CURRENT_LIST_DIR}/hashes.cc
  ${CMAKE_CURRENT_LIST_DIR}/iso_time.cc
  ${CMAKE_CURRENT_LIST_DIR}/sigv4.cc
  ${CMAKE_CURRENT_LIST_DIR}/xml.cc
  ${CMAKE_CURRENT_LIST_DIR}/messages.cc)
target_link_libraries(stripeback_s3_sign PUBLIC stripeback_util OpenSSL::Crypto
                      PRIVATE stripeback_warnings)
set_target_properties(stripeback_s3_sign PROPERTIES POSITION_INDEPENDENT_CODE ON)
