# The S3 test gateway (scripts/s3-server.sh) and the test support that drives it; the first
# test process to need the gateway starts it (15-20 s) unless one runs already.
sb_test(s3_server_test integration s3_server_test.cc LIBS OpenSSL::Crypto)
