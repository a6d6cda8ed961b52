# The S3 storage (backends/s3/s3_storage.h) through the stripeback binary against the test
# gateway (scripts/s3-server.sh): backup, restore, validate and list of s3:// destinations.
sb_test(s3_storage_test integration ${CMAKE_CURRENT_LIST_DIR}/storage_test.cc
        LIBS stripeback_it_util)
target_compile_definitions(s3_storage_test PRIVATE STRIPEBACK_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(s3_storage_test stripeback_cli)

# Locked backups (--lock-days) and the leftover rule's abort of unfinished uploads.
sb_test(s3_lock_test integration ${CMAKE_CURRENT_LIST_DIR}/lock_test.cc
        LIBS stripeback_it_util)
add_dependencies(s3_lock_test stripeback_cli)
