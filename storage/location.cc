// Location parsing and joining (see location.h).
#include "storage/location.h"
