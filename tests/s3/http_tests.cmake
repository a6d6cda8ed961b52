# The HTTP transfer layer (backends/s3/http.h) against a scriptable test server on loopback
# (http_test_server.h), compiled into the test binary.
sb_test(s3_http_test unit
        ${CMAKE_CURRENT_LIST_DIR}/http_test.cc ${CMAKE_CURRENT_LIST_DIR}/http_test_server.cc
        LIBS stripeback_s3_http Threads::Threads)
# The test server uses Boost.Asio's blocking calls; as in cli/CMakeLists.txt, GCC's
# ThreadSanitizer warns (-Wtsan) about the fences Asio's own locking comes with.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/http_test.cc
                              ${CMAKE_CURRENT_LIST_DIR}/http_test_server.cc
                              PROPERTIES COMPILE_OPTIONS -Wno-tsan)
endif()
