# The S3 client (client.h): the S3 operations as asynchronous, signed, retried requests over
# one HTTP session, and the resolution of endpoint, region and credentials (config.h).
add_library(stripeback_s3_client STATIC ${CMAKE_CURRENT_LIST_DIR}/client.cc
                                        ${CMAKE_CURRENT_LIST_DIR}/client_target.cc
                                        ${CMAKE_CURRENT_LIST_DIR}/config.cc)
target_link_libraries(stripeback_s3_client PUBLIC stripeback_s3_http stripeback_s3_sign
                      PRIVATE stripeback_warnings)
set_target_properties(stripeback_s3_client PROPERTIES POSITION_INDEPENDENT_CODE ON)
