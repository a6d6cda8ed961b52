# The signer against the published SigV4 vectors, its digests and times, the XML reader and
# the S3 messages.
sb_test(s3_sign_test unit
  ${CMAKE_CURRENT_LIST_DIR}/sigv4_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/hashes_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/iso_time_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/xml_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/messages_test.cc
  LIBS stripeback_s3_sign)
