// einsum and tensordot: contractions reduced to diagonal/sum/permute/reshape and one mm or
// bmm per pair of operands, so large contractions run through BLAS.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ember/ops/bmm.h"
#include "ember/ops/diagonal.h"
#include "ember/ops/einsum.h"
#include "ember/ops/expand.h"
#include "ember/ops/mm.h"
#include "ember/ops/mul.h"
#include "ember/ops/permute.h"
#include "ember/ops/reshape.h"
#include "ember/ops/sum.h"
#include "ember/ops/tensordot.h"
#include "ember/ops/unsqueeze.h"
#include "ember/ops/view.h"
#include "ember/tensor.h"

namespace ember::native {
namespace {

// Labels: 'A'-'Z' are 0-25 and 'a'-'z' 26-51 (so an implicit output lists capitals
// first, as PyTorch's); the dims an ellipsis covers are kFirstEllipsis + j, counted
// from the left of the widest ellipsis and aligned right.
constexpr int kLetters = 52, kFirstEllipsis = 52;
using Labels = std::vector<int>;

char label_char(int l) { return l < 26 ? char('A' + l) : char('a' + l - 26); }

struct Term {
  Labels letters_before, letters_after;  // around the ellipsis (all in `before` when there is none)
  bool has_ellipsis = false;
};

// Parses "ab...c" starting at `pos` of `eq` (for error positions) up to `end`.
Term parse_term(const std::string& eq, size_t pos, size_t end, const std::string& what) {
  Term t;
  for (size_t i = pos; i < end; ++i) {
    const char c = eq[i];
    if (c == ' ') continue;
    if (c == '.') {
      EMBER_CHECK(!t.has_ellipsis, Runtime, "einsum(): found '.' for ", what, " for which an ellipsis was already found");
      EMBER_CHECK(i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.', Runtime, "einsum(): found '.' for ", what,
                  " that is not part of any ellipsis");
      t.has_ellipsis = true;
      i += 2;
      continue;
    }
    const bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    EMBER_CHECK(upper || lower, Runtime, "einsum(): invalid subscript given at index ", i,
                " in the equation string, subscripts must be in [a-zA-Z]");
    (t.has_ellipsis ? t.letters_after : t.letters_before).push_back(upper ? c - 'A' : c - 'a' + 26);
  }
  return t;
}

struct Operand {
  Tensor t;
  Labels labels;  // one per dim of t
  bool ends_in_view = false;  // t was made by a view (the last op of a bmm/mm contraction)
};

DimVector sizes_of(const Tensor& t, const Labels& dims_in_order, const Labels& labels) {
  DimVector out;
  for (int l : dims_in_order) out.push_back(t.size(std::find(labels.begin(), labels.end(), l) - labels.begin()));
  return out;
}

bool contains(const Labels& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); }

// Sums `op` over its labels not in `keep`.
void sum_out(Operand& op, const Labels& keep) {
  IntList dims;
  Labels rest;
  for (size_t i = 0; i < op.labels.size(); ++i) {
    if (contains(keep, op.labels[i])) rest.push_back(op.labels[i]);
    else dims.push_back((int64_t)i);
  }
  if (dims.empty()) return;
  op.t = ember::sum(op.t, dims, false, op.t.dtype());
  op.labels = rest;
}

// Puts the dims of `op` in `order` (which names exactly its labels) and expands each to `size`.
Tensor arranged(const Operand& op, const Labels& order, const std::vector<int64_t>& size_of) {
  IntList perm;
  DimVector shape;
  for (int l : order) {
    perm.push_back(std::find(op.labels.begin(), op.labels.end(), l) - op.labels.begin());
    shape.push_back(size_of[l]);
  }
  // No-op permutes and expands are skipped: the result ends with its last real op, as PyTorch's.
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == (int64_t)i;
  Tensor t = identity ? op.t : ember::permute(op.t, perm);
  return t.sizes() == shape ? t : ember::expand(t, shape);
}

int64_t product(const Labels& ls, const std::vector<int64_t>& size_of) {
  int64_t n = 1;
  for (int l : ls) n *= size_of[l];
  return n;
}

// `op` with its dims in the order of `order` (its labels and others, which get size-one dims).
Tensor aligned(const Operand& op, const Labels& order) {
  Tensor t = op.t;
  Labels have = op.labels;
  for (int l : order)
    if (!contains(have, l)) {
      t = ember::unsqueeze(t, t.dim());
      have.push_back(l);
    }
  IntList perm;
  for (int l : order) perm.push_back(std::find(have.begin(), have.end(), l) - have.begin());
  return ember::permute(t, perm);
}

// a x b without a contracted label: a broadcast product in `keep`'s order, as PyTorch's (its node
// is MulBackward0, and the last one gives the output's order).
Operand outer_product(const Operand& a, const Operand& b, const Labels& keep) {
  Labels order;
  for (int l : keep)
    if ((contains(a.labels, l) || contains(b.labels, l)) && !contains(order, l)) order.push_back(l);
  return {ember::mul(aligned(a, order), aligned(b, order)), order};
}

// a x b as one bmm: [batch, left, contracted] @ [batch, contracted, right]; labels in
// neither `keep` nor the other operand are summed first.
Operand contract(Operand a, Operand b, const Labels& keep, const std::vector<int64_t>& size_of) {
  Labels keep_a = keep, keep_b = keep;
  keep_a.insert(keep_a.end(), b.labels.begin(), b.labels.end());
  keep_b.insert(keep_b.end(), a.labels.begin(), a.labels.end());
  sum_out(a, keep_a);
  sum_out(b, keep_b);
  Labels batch, left, summed, right;
  for (int l : a.labels) {
    if (!contains(b.labels, l)) left.push_back(l);
    else (contains(keep, l) ? batch : summed).push_back(l);
  }
  for (int l : b.labels)
    if (!contains(a.labels, l)) right.push_back(l);
  if (summed.empty()) return outer_product(a, b, keep);
  const int64_t nb = product(batch, size_of), nl = product(left, size_of), nc = product(summed, size_of),
                nr = product(right, size_of);
  Labels a_order = batch, b_order = batch;
  a_order.insert(a_order.end(), left.begin(), left.end());
  a_order.insert(a_order.end(), summed.begin(), summed.end());
  b_order.insert(b_order.end(), summed.begin(), summed.end());
  b_order.insert(b_order.end(), right.begin(), right.end());
  Tensor a3 = ember::reshape(arranged(a, a_order, size_of), IntList{nb, nl, nc});
  Tensor b3 = ember::reshape(arranged(b, b_order, size_of), IntList{nb, nc, nr});
  Labels labels = batch;
  labels.insert(labels.end(), left.begin(), left.end());
  labels.insert(labels.end(), right.begin(), right.end());
  DimVector shape;
  for (int l : labels) shape.push_back(size_of[l]);
  Tensor r = nb == 1 ? ember::mm(ember::reshape(a3, IntList{nl, nc}), ember::reshape(b3, IntList{nc, nr}))
                     : ember::bmm(a3, b3);
  return {ember::reshape(r, shape), labels, true};
}

}  // namespace

Tensor einsum(const std::string& equation, const TensorList& tensors, const std::optional<IntList>& path) {
  (void)path;  // a contraction order only: the result is the same in any order
  EMBER_CHECK(!tensors.empty(), Runtime, "einsum(): must provide at least one operand");
  for (const Tensor& t : tensors)
    EMBER_CHECK(t.dtype() == tensors[0].dtype(), Runtime, "expected scalar type ", dtype_title(tensors[0].dtype()),
                " but found ", dtype_title(t.dtype()));
  const size_t arrow = equation.find("->");
  const size_t lhs_end = arrow == std::string::npos ? equation.size() : arrow;
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = equation.find(',', start);
    if (comma == std::string::npos || comma > lhs_end) comma = lhs_end;
    EMBER_CHECK(terms.size() < tensors.size(), Runtime,
                "einsum(): fewer operands were provided than specified in the equation");
    terms.push_back(parse_term(equation, start, comma, "operand " + str(terms.size())));
    if (comma == lhs_end) break;
    start = comma + 1;
  }
  EMBER_CHECK(terms.size() == tensors.size(), Runtime,
              "einsum(): more operands were provided than specified in the equation");
  // Each operand's labels per dim, its ellipsis dims aligned right.
  int64_t widest = 0;
  std::vector<Operand> ops;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& term = terms[i];
    const Tensor& t = tensors[i];
    const int64_t named = (int64_t)(term.letters_before.size() + term.letters_after.size());
    if (term.has_ellipsis) {
      EMBER_CHECK(named <= t.dim(), Runtime, "einsum(): the number of subscripts in the equation (", named,
                  ") is more than the number of dimensions (", t.dim(), ") for operand ", i);
    } else {
      EMBER_CHECK(named == t.dim(), Runtime, "einsum(): the number of subscripts in the equation (", named,
                  ") does not match the number of dimensions (", t.dim(), ") for operand ", i,
                  " and no ellipsis was given");
    }
    widest = std::max(widest, t.dim() - named);
  }
  std::vector<int64_t> size_of(kFirstEllipsis + widest, -1);
  std::vector<int> count(kFirstEllipsis + widest, 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    // Occurrences in the equation decide the implicit output: "ii" is a trace, "ii->i" a diagonal.
    for (const Labels* ls : {&terms[i].letters_before, &terms[i].letters_after})
      for (int l : *ls) ++count[l];
    Operand op{tensors[i], terms[i].letters_before};
    const int64_t covered = tensors[i].dim() - (int64_t)(terms[i].letters_before.size() + terms[i].letters_after.size());
    for (int64_t j = 0; j < covered; ++j) op.labels.push_back(kFirstEllipsis + (int)(widest - covered + j));
    op.labels.insert(op.labels.end(), terms[i].letters_after.begin(), terms[i].letters_after.end());
    // A label repeated within an operand takes the diagonal (moved last).
    for (bool again = true; again;) {
      again = false;
      for (size_t p = 0; p < op.labels.size() && !again; ++p)
        for (size_t q = p + 1; q < op.labels.size() && !again; ++q) {
          if (op.labels[p] != op.labels[q]) continue;
          EMBER_CHECK(op.t.size(p) == op.t.size(q), Runtime, "einsum(): subscript ", label_char(op.labels[p]),
                      " is repeated for operand ", i, " but the sizes don't match, ", op.t.size(q),
                      " != ", op.t.size(p));
          const int l = op.labels[p];
          op.t = ember::diagonal(op.t, 0, (int64_t)p, (int64_t)q);
          op.labels.erase(op.labels.begin() + q);
          op.labels.erase(op.labels.begin() + p);
          op.labels.push_back(l);
          again = true;
        }
    }
    for (size_t d = 0; d < op.labels.size(); ++d) {
      const int l = op.labels[d];
      const int64_t s = op.t.size(d);
      if (size_of[l] == -1 || size_of[l] == 1) {
        size_of[l] = s;
      } else if (s != 1 && s != size_of[l]) {
        if (l < kLetters)
          EMBER_FAIL(Runtime, "einsum(): subscript ", label_char(l), " has size ", s, " for operand ", i,
                     " which does not broadcast with previously seen size ", size_of[l]);
        EMBER_FAIL(Runtime, "einsum(): operands do not broadcast with remapped shapes (original->remapped)");
      }
    }
    ops.push_back(std::move(op));
  }
  // The output's labels: given after "->", else the ellipsis then the labels seen once, in order.
  Labels out;
  if (arrow != std::string::npos) {
    Term t = parse_term(equation, arrow + 2, equation.size(), "the output");
    Labels all = t.letters_before;
    if (t.has_ellipsis)
      for (int64_t j = 0; j < widest; ++j) all.push_back(kFirstEllipsis + (int)j);
    all.insert(all.end(), t.letters_after.begin(), t.letters_after.end());
    for (size_t i = 0; i < all.size(); ++i) {
      const int l = all[i];
      if (l >= kLetters) continue;
      EMBER_CHECK(count[l] > 0, Runtime, "einsum(): output subscript ", label_char(l),
                  " does not appear in the equation for any input operand");
      EMBER_CHECK(std::count(all.begin(), all.end(), l) == 1, Runtime, "einsum(): output subscript ",
                  label_char(l), " appears more than once in the output");
    }
    out = all;
  } else {
    for (int64_t j = 0; j < widest; ++j) out.push_back(kFirstEllipsis + (int)j);
    for (int l = 0; l < kLetters; ++l)
      if (count[l] == 1) out.push_back(l);
  }
  // The last node is PyTorch's: one operand permutes to the output's order, then sums the labels
  // not in it (PermuteBackward0 or SumBackward1); several end in a product (MulBackward0) when every
  // label is in the output, else in a view (ViewBackward0).
  bool contracts = false;
  for (const Operand& op : ops)
    for (int l : op.labels) contracts |= !contains(out, l);
  if (ops.size() == 1) {
    Labels order = out;
    for (int l : ops[0].labels)
      if (!contains(order, l)) order.push_back(l);
    Operand all{aligned(ops[0], order), order};
    sum_out(all, out);
    return all.t;
  }
  // Contract left to right, keeping what the output or a later operand needs.
  Operand acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    Labels keep = out;
    for (size_t j = i + 1; j < ops.size(); ++j) keep.insert(keep.end(), ops[j].labels.begin(), ops[j].labels.end());
    acc = contract(std::move(acc), ops[i], keep, size_of);
  }
  // Every output label is in acc: each came from an operand and was kept since.
  Tensor result = arranged(acc, out, size_of);
  const bool viewed = acc.ends_in_view && result.is_same(acc.t);
  return contracts && !viewed ? ember::view(result, result.sizes()) : result;
}

Tensor tensordot(const Tensor& self, const Tensor& other, const IntList& dims_self, const IntList& dims_other) {
  EMBER_CHECK(dims_self.size() == dims_other.size(), Runtime, "both dimension lists should have same length");
  EMBER_CHECK(self.dtype() == other.dtype(), Runtime, "both inputs should have same dtype");
  std::vector<bool> used_a(self.dim(), false), used_b(other.dim(), false);
  IntList ca, cb;
  int64_t k = 1;
  DimVector exp_a = self.sizes(), exp_b = other.sizes();
  for (size_t i = 0; i < dims_self.size(); ++i) {
    const int64_t da = wrap_dim(dims_self[i], self.dim(), "tensordot");
    const int64_t db = wrap_dim(dims_other[i], other.dim(), "tensordot");
    EMBER_CHECK(!used_a[da], Runtime, "dim ", da, " appears multiple times in the list of dims");
    EMBER_CHECK(!used_b[db], Runtime, "dim ", db, " appears multiple times in the list of dims");
    used_a[da] = used_b[db] = true;
    const int64_t sa = self.size(da), sb = other.size(db);
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1, Runtime, "contracted dimensions need to match, but first has size ",
                sa, " in dim ", da, " and second has size ", sb, " in dim ", db);
    // A size-1 dim broadcasts against the other side's.
    exp_a[da] = exp_b[db] = std::max(sa, sb);
    k *= std::max(sa, sb);
    ca.push_back(da);
    cb.push_back(db);
  }
  IntList perm_a, perm_b = cb;
  DimVector out_shape;
  int64_t m = 1, n = 1;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!used_a[d]) {
      perm_a.push_back(d);
      out_shape.push_back(self.size(d));
      m *= self.size(d);
    }
  for (int64_t d : ca) perm_a.push_back(d);
  for (int64_t d = 0; d < other.dim(); ++d)
    if (!used_b[d]) {
      perm_b.push_back(d);
      out_shape.push_back(other.size(d));
      n *= other.size(d);
    }
  Tensor a = ember::reshape(ember::permute(ember::expand(self, exp_a), perm_a), IntList{m, k});
  Tensor b = ember::reshape(ember::permute(ember::expand(other, exp_b), perm_b), IntList{k, n});
  return ember::reshape(ember::mm(a, b), out_shape);
}

}  // namespace ember::native
