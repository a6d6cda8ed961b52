sb_test(s3_location_test unit ${CMAKE_CURRENT_LIST_DIR}/location_test.cc LIBS stripeback_s3_url)
