# The S3 client (backends/s3/client.h) and its configuration (config.h), the client against
# the scriptable HTTP test server (http_test_server.h), compiled into the test binary.
sb_test(s3_client_test unit
        ${CMAKE_CURRENT_LIST_DIR}/config_test.cc ${CMAKE_CURRENT_LIST_DIR}/client_test.cc
        ${CMAKE_CURRENT_LIST_DIR}/http_test_server.cc
        LIBS stripeback_s3_client Threads::Threads)
# As for s3_http_test: GCC's ThreadSanitizer warns (-Wtsan) about Boost.Asio's fences.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/client_test.cc
                              PROPERTIES COMPILE_OPTIONS -Wno-tsan)
endif()
