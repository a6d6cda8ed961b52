// See fault_storage.h.
