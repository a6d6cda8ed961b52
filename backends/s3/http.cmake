# HTTP transfers over libcurl's multi interface (http.h), for the S3 client.
add_library(stripeback_s3_http STATIC ${CMAKE_CURRENT_LIST_DIR}/http.cc)
target_link_libraries(stripeback_s3_http PUBLIC stripeback_util PkgConfig::CURL
                      PRIVATE stripeback_warnings)
# The default User-Agent, "stripeback/<version>".
target_compile_definitions(stripeback_s3_http PRIVATE
                           STRIPEBACK_VERSION_STRING="${PROJECT_VERSION}")
set_target_properties(stripeback_s3_http PROPERTIES POSITION_INDEPENDENT_CODE ON)
