#include "plan.h"

#include <map>
#include <queue>
#include <tuple>

#include "tensor.h"

namespace conflux::train::sbp {

const char* stepName(StepKind k) {
  switch (k) {
    case StepKind::kCopy: return "copy";
    case StepKind::kSlice: return "local slice";
    case StepKind::kToPartial: return "local";
    case StepKind::kAllReduce: return "AllReduce";
    case StepKind::kReduceScatter: return "ReduceScatter";
    case StepKind::kAllGather: return "AllGather";
    case StepKind::kAlltoAll: return "AlltoAll";
  }
  return "?";
}

StepKind stepKind(const Layout& from, const Layout& to) {
  if (from == to) return StepKind::kCopy;
  if (from.isPartial()) return to.isSplit() ? StepKind::kReduceScatter : StepKind::kAllReduce;
  if (from.isSplit()) {
    if (to.isSplit()) return StepKind::kAlltoAll;
    return to.isPartial() ? StepKind::kToPartial : StepKind::kAllGather;
  }
  return to.isSplit() ? StepKind::kSlice : StepKind::kToPartial;  // from Broadcast
}

std::string Plan::describe() const {
  if (steps.empty()) return "no communication";
  std::string s;
  for (const Step& st : steps) {
    if (!s.empty()) s += "; ";
    s += "axis " + std::to_string(st.axis) + ": " + toString(st.from) + " -> " + toString(st.to) + " (" +
         stepName(st.kind) + ", " + std::to_string(st.bytes) + " bytes)";
  }
  return s;
}

void validate(const Signature& sig, const Shape& shape, const std::vector<int>& mesh, const char* which) {
  if (mesh.empty()) throw Error(cfxInvalidArgument, "sbp: the mesh has no axes");
  for (int n : mesh) {
    if (n < 1) throw Error(cfxInvalidArgument, "sbp: a mesh axis has " + std::to_string(n) + " ranks");
  }
  for (int64_t d : shape) {
    if (d < 0) throw Error(cfxInvalidArgument, "sbp: negative dimension in the shape");
  }
  if (sig.size() != mesh.size()) {
    throw Error(cfxInvalidArgument, std::string("sbp: the ") + which + " signature " + toString(sig) + " has " +
                                        std::to_string(sig.size()) + " layouts for a mesh of " +
                                        std::to_string(mesh.size()) + " axes");
  }
  for (const Layout& l : sig) {
    if (l.isSplit() && (l.dim < 0 || l.dim >= static_cast<int>(shape.size()))) {
      throw Error(cfxInvalidArgument, std::string("sbp: the ") + which + " signature " + toString(sig) +
                                          " splits dimension " + std::to_string(l.dim) + " of a tensor with " +
                                          std::to_string(shape.size()) + " dimensions");
    }
  }
}

bool canChangeDirectly(const Signature& cur, int axis, const Layout& next) {
  const Layout& a = cur[axis];
  for (size_t j = axis + 1; j < cur.size(); ++j) {
    const Layout& inner = cur[j];
    if (inner.isSplit() && ((a.isSplit() && a.dim == inner.dim) || (next.isSplit() && next.dim == inner.dim))) {
      return false;
    }
    if (inner.isPartial() && ((a.isPartial() && a.kind != inner.kind) || (next.isPartial() && next.kind != inner.kind))) {
      return false;
    }
  }
  return true;
}

Shape axisView(const Shape& shape, const Signature& cur, int axis, const std::vector<int>& mesh,
               const std::vector<int>& coords) {
  Shape v = shape;
  for (size_t j = 0; j < cur.size(); ++j) {
    if (static_cast<int>(j) != axis) v = applyLayout(v, cur[j], mesh[j], coords[j]);
  }
  return v;
}

uint64_t stepBytes(StepKind kind, const Layout& from, const Layout& to, const Shape& view, int parts, size_t elemBytes) {
  const uint64_t n = static_cast<uint64_t>(parts);
  auto bytes = [&](const Shape& s) { return static_cast<uint64_t>(elements(s)) * elemBytes; };
  switch (kind) {
    case StepKind::kAllReduce: return 2 * (n - 1) * bytes(view) / n;
    case StepKind::kReduceScatter: return (n - 1) * bytes(splitShape(view, to.dim, parts, 0));
    case StepKind::kAllGather: return (n - 1) * bytes(splitShape(view, from.dim, parts, 0));
    case StepKind::kAlltoAll:
      return (n - 1) * bytes(splitShape(splitShape(view, from.dim, parts, 0), to.dim, parts, 0));
    default: return 0;
  }
}

namespace {
// What an axis may change to: its target first, then Broadcast and every split as detours (a
// reduction is cheaper onto a split, and a split along another dimension can unblock an outer
// axis).
std::vector<Layout> candidates(const Layout& target, int dims) {
  std::vector<Layout> out{target};
  auto add = [&](const Layout& l) {
    if (!(l == target)) out.push_back(l);
  };
  add(Layout::broadcast());
  for (int d = 0; d < dims; ++d) add(Layout::split(d));
  return out;
}
}  // namespace

Plan planBoxing(const Signature& from, const Signature& to, const Shape& shape, size_t elemBytes,
                const std::vector<int>& mesh) {
  // Dijkstra over signatures whose axes each hold their source layout, their target, Broadcast or
  // a split ((3 + dims)^axes states at most). Cost: (bytes, steps, order found), so every rank picks the same path.
  using Cost = std::tuple<uint64_t, int, uint64_t>;
  struct Entry {
    Cost cost;
    Signature sig;
    bool operator>(const Entry& o) const { return cost > o.cost; }
  };
  const std::vector<int> origin(mesh.size(), 0);  // part 0 is the largest share
  std::map<std::string, std::pair<Cost, Step>> best;  // reached signature -> cost, and the step into it
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> open;
  uint64_t found = 0;
  best[toString(from)] = {Cost{0, 0, found}, Step{}};
  open.push(Entry{Cost{0, 0, found++}, from});
  const std::string goal = toString(to);
  while (!open.empty()) {
    Entry e = open.top();
    open.pop();
    const std::string key = toString(e.sig);
    if (best.at(key).first != e.cost) continue;  // a stale entry
    if (key == goal) break;
    for (int k = static_cast<int>(mesh.size()) - 1; k >= 0; --k) {
      for (const Layout& next : candidates(to[k], static_cast<int>(shape.size()))) {
        if (next == e.sig[k] || !canChangeDirectly(e.sig, k, next)) continue;
        Step st;
        st.axis = k;
        st.from = e.sig[k];
        st.to = next;
        st.kind = stepKind(st.from, next);
        st.before = e.sig;
        st.bytes = stepBytes(st.kind, st.from, next, axisView(shape, e.sig, k, mesh, origin), mesh[k], elemBytes);
        Signature after = e.sig;
        after[k] = next;
        const std::string akey = toString(after);
        Cost c{std::get<0>(e.cost) + st.bytes, std::get<1>(e.cost) + 1, found};
        auto it = best.find(akey);
        if (it != best.end() && std::tie(std::get<0>(it->second.first), std::get<1>(it->second.first)) <=
                                    std::tie(std::get<0>(c), std::get<1>(c))) {
          continue;
        }
        ++found;
        best[akey] = {c, st};
        open.push(Entry{c, after});
      }
    }
  }
  Plan plan;
  for (std::string key = goal; key != toString(from);) {
    const Step& st = best.at(key).second;
    plan.steps.insert(plan.steps.begin(), st);
    plan.bytes += st.bytes;
    key = toString(st.before);
  }
  return plan;
}

}  // namespace conflux::train::sbp
