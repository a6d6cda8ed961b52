# The C API with s3:// locations against the test gateway (scripts/s3-server.sh): an
# embedder linking the shared library, with the s3_* option keys only.
sb_test(s3_capi_test integration ${CMAKE_CURRENT_LIST_DIR}/capi_test.cc LIBS stripeback_shared)
