#include "ember/scalar_convert.h"

#include "ember/dtype.h"

namespace ember {

void check_scalar_fits(const Scalar& s, ScalarType dt) {
  visit_dtype(dt, [&]<typename T>() { (void)checked_scalar<T>(s); });
}

}  // namespace ember
