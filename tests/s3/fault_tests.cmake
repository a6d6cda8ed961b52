# The S3 storage through the stripeback binary against the test gateway behind a
# fault-injecting proxy (tests/support/s3_fault_proxy.h): SlowDown, resets, lost answers and
# truncated bodies are retried; faults beyond the attempts fail the job naming the object.
sb_test(s3_fault_test integration ${CMAKE_CURRENT_LIST_DIR}/fault_test.cc
        LIBS stripeback_it_util)
add_dependencies(s3_fault_test stripeback_cli)
