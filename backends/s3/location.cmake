# The S3 location grammar (s3://BUCKET/PREFIX).
add_library(stripeback_s3_url STATIC ${CMAKE_CURRENT_LIST_DIR}/url.cc)
target_link_libraries(stripeback_s3_url PUBLIC stripeback_storage PRIVATE stripeback_warnings)
set_target_properties(stripeback_s3_url PROPERTIES POSITION_INDEPENDENT_CODE ON)
