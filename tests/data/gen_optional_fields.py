#!/usr/bin/env python3
"""Builds ONNX models for the optional-field round-trip test: one base model in which every
optional field mcc carries is present (model, graph, If/Loop/Scan bodies, a branch output naming
an outer value, value_info, types, shapes, dims, tensors, attributes, doc strings, metadata,
opset imports, functions, training info), and one variant per field with that field omitted
(plus variants where a field is present but empty: `type {}`; the base itself has shapes with
no dims, a dim with neither value nor param, an opset domain and a node domain present and empty).

Each variant names where its field lives (a locator) so a checker can tell whether the field is
present in a converted model, even after a pipeline moved things around. Used by
tests/cli/check_optional_fields.py; run alone (`gen_optional_fields.py OUT_DIR`) it only writes
the models. Not a test of ONNX semantics: the models compute small float expressions.
"""
import sys
from pathlib import Path

import onnx
from onnx import TensorProto as T
from onnx import helper as h

OPSET = 17
IR_VERSION = 10


def _meta(msg, key, value):
    e = msg.metadata_props.add()
    e.key, e.value = key, value


def _vi(name, elem, dims, doc=None, denot=None):
    vi = h.make_tensor_value_info(name, elem, dims)
    if doc:
        vi.doc_string = doc
    if denot:
        vi.type.denotation = denot
    return vi


def _branch(name, sign):
    c = h.make_node("Constant", [], [name + "_c"], name=name + "_const",
                    value=h.make_tensor(name + "_t", T.FLOAT, [2], [sign, sign]))
    a = h.make_node("Add", ["m", name + "_c"], [name + "_o"], name=name + "_add")
    return h.make_graph([c, a], name, [], [_vi(name + "_o", T.FLOAT, ["N", 2], doc=name + " out")],
                        doc_string=name + " doc")


def _pass_through_branch(name, op):
    """A branch whose output is the outer value `m` itself (op "") or op(m), declared here."""
    nodes = [h.make_node(op, ["m"], [name + "_o"], name=name + "_id")] if op else []
    out = name + "_o" if op else "m"
    return h.make_graph(nodes, name, [], [_vi(out, T.FLOAT, ["N", 2], doc=name + " view")])


def _loop_body():
    ins = [_vi("i", T.INT64, []), _vi("c_in", T.BOOL, []), _vi("acc", T.FLOAT, ["N", 2])]
    nodes = [h.make_node("Identity", ["c_in"], ["c_out"], name="loop_cond"),
             h.make_node("Add", ["acc", "w"], ["acc_out"], name="loop_add")]
    outs = [_vi("c_out", T.BOOL, []), _vi("acc_out", T.FLOAT, ["N", 2])]
    return h.make_graph(nodes, "loop_body", ins, outs, value_info=[_vi("acc_out", T.FLOAT, ["N", 2])])


def _scan_body():
    ins = [_vi("st", T.FLOAT, [2]), _vi("row", T.FLOAT, [2])]
    nodes = [h.make_node("Add", ["st", "row"], ["st_out"], name="scan_add"),
             h.make_node("Mul", ["row", "w"], ["row_out"], name="scan_mul")]
    outs = [_vi("st_out", T.FLOAT, [2]), _vi("row_out", T.FLOAT, [2])]
    return h.make_graph(nodes, "scan_body", ins, outs)


def _function():
    f = h.make_function("local", "Twice", ["X"], ["Y"],
                        [h.make_node("Add", ["X", "X"], ["Y"], name="twice_add")],
                        [h.make_opsetid("", OPSET)], attributes=[], doc_string="twice doc")
    f.value_info.append(_vi("Y", T.FLOAT, ["N", 2]))
    _meta(f, "fkey", "fvalue")
    return f


def _training_info():
    alg = h.make_graph([h.make_node("Identity", ["w"], ["w_next"], name="alg_id")], "algorithm", [],
                       [_vi("w_next", T.FLOAT, [2])])
    ti = onnx.TrainingInfoProto()
    ti.algorithm.CopyFrom(alg)
    b = ti.update_binding.add()
    b.key, b.value = "w", "w_next"
    return ti


def base_model():
    """Every optional field present (a few with a default value, presence being the point)."""
    x = _vi("x", T.FLOAT, ["N", 2], doc="x doc", denot="TENSOR")
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    _meta(x, "vkey", "vvalue")
    inputs = [_vi("cond", T.BOOL, []), x, _vi("n", T.INT64, []), _vi("rows", T.FLOAT, [3, 2])]
    w = h.make_tensor("w", T.FLOAT, [2], [0.5, -0.25])       # typed float_data
    w.doc_string = "w doc"
    b = h.make_tensor("b", T.FLOAT, [2], b"\x00\x00\x80\x3f\x00\x00\x00\x40", raw=True)
    k = h.make_tensor("k_t", T.FLOAT, [], [3.0])
    k.doc_string = "k doc"
    kattr = h.make_attribute("value", k)
    kattr.doc_string = "attr doc"
    nodes = [
        h.make_node("Add", ["x", "w"], ["a"], name="add0", doc_string="add doc", domain=""),
        h.make_node("Constant", [], ["k"], name="konst"),
        h.make_node("Mul", ["a", "k"], ["m0"], name="mul0"),
        h.make_node("Twice", ["m0"], ["m"], name="twice", domain="local"),
        h.make_node("If", ["cond"], ["y"], name="if0", then_branch=_branch("then", 1.0),
                    else_branch=_branch("else", -1.0)),
        h.make_node("Loop", ["n", "cond", "m"], ["z"], name="loop0", body=_loop_body()),
        h.make_node("Scan", ["b", "rows"], ["s_state", "s_rows"], name="scan0", body=_scan_body(),
                    num_scan_inputs=1),
        h.make_node("Add", ["y", "b"], ["yb"], name="add1"),
        h.make_node("If", ["cond"], ["y1"], name="if1", then_branch=_pass_through_branch("outer_then", ""),
                    else_branch=_pass_through_branch("outer_else", "Identity")),
    ]
    nodes[1].attribute.append(kattr)
    _meta(nodes[0], "nkey", "nvalue")
    a_info = _vi("a", T.FLOAT, ["N", 2], doc="a doc")
    a_info.type.tensor_type.shape.dim[1].Clear()                # a dim with neither value nor param
    a_info.type.tensor_type.shape.dim[1].denotation = "DATA_CHANNEL"
    outputs = [_vi("yb", T.FLOAT, ["N", 2], doc="yb doc"), _vi("z", T.FLOAT, ["N", 2]),
               _vi("s_state", T.FLOAT, [2]), _vi("s_rows", T.FLOAT, [3, 2]), _vi("y1", T.FLOAT, ["N", 2])]
    g = h.make_graph(nodes, "main", inputs, outputs, initializer=[w, b], doc_string="graph doc",
                     value_info=[a_info, _vi("k", T.FLOAT, [])])
    _meta(g, "gkey", "gvalue")
    qa = g.quantization_annotation.add()
    qa.tensor_name = "a"
    e = qa.quant_parameter_tensor_names.add()
    e.key, e.value = "SCALE_TENSOR", "w"
    m = h.make_model(g, opset_imports=[h.make_opsetid("", OPSET), h.make_opsetid("local", 1)],
                     producer_name="gen_optional_fields", producer_version="1.0", domain="test.mcc",
                     model_version=7, doc_string="model doc", functions=[_function()])
    m.ir_version = IR_VERSION
    m.opset_import[0].domain = ""                              # present and empty
    _meta(m, "mkey", "mvalue")
    m.training_info.append(_training_info())
    return m


# ---------------------------------------------------------------- locators

def graphs(m):
    """Every GraphProto of the model: main graph, node bodies (nested), training graphs."""
    out = []

    def walk(g):
        out.append(g)
        for n in g.node:
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(m.graph)
    for ti in m.training_info:
        for f in ("initialization", "algorithm"):
            if ti.HasField(f):
                walk(getattr(ti, f))
    return out


def graph(name):
    return lambda m: next((g for g in graphs(m) if g.name == name), None)


def node(out_name):
    def find(m):
        for g in graphs(m):
            for n in g.node:
                if out_name in n.output:
                    return n
        return None
    return find


def attr(out_name, attr_name):
    def find(m):
        n = node(out_name)(m)
        return next((a for a in n.attribute if a.name == attr_name), None) if n else None
    return find


def value_info(role, name, graph_name=None):
    """A ValueInfoProto of `role` (input, output, value_info) named `name`."""
    def find(m):
        for g in graphs(m):
            if graph_name and g.name != graph_name:
                continue
            for vi in getattr(g, role):
                if vi.name == name:
                    return vi
        return None
    return find


def sub(loc, *path):
    """A sub-message of what `loc` finds, only when every field on the path is present."""
    def find(m):
        msg = loc(m)
        for f in path:
            if msg is None:
                return None
            if isinstance(f, int):
                msg = msg[f] if f < len(msg) else None
            elif msg.HasField(f):
                msg = getattr(msg, f)
            else:
                return None
        return msg
    return find


def initializer(name):
    return lambda m: next((t for g in graphs(m) for t in g.initializer if t.name == name), None)


def model(m):
    return m


def dim(role, name, k, graph_name=None):
    loc = sub(value_info(role, name, graph_name), "type", "tensor_type", "shape")
    return lambda m: (lambda s: s.dim[k] if s is not None and k < len(s.dim) else None)(loc(m))


def _function_loc(m):
    return m.functions[0] if len(m.functions) else None


def _opset(domain):
    return lambda m: next((o for o in m.opset_import if o.version and o.domain == domain), None)


# ---------------------------------------------------------------- variants

class Variant:
    """The base model with `field` removed from what `loc` finds, or edited by `mutate`; either
    way `field` of what `loc` finds is absent in the variant and must stay absent."""

    def __init__(self, name, loc, field, mutate=None):
        self.name, self.loc, self.field, self.mutate = name, loc, field, mutate

    def build(self):
        m = base_model()
        if self.mutate:
            self.mutate(m)
        else:
            target = self.loc(m)
            assert target is not None and self.present(m), f"{self.name}: the base model lacks the field"
            target.ClearField(self.field)
        return m

    def present(self, m):
        """Whether the field is present in m (None when its container is gone, e.g. folded)."""
        target = self.loc(m)
        if target is None:
            return None
        value = getattr(target, self.field)
        if hasattr(value, "__len__") and not isinstance(value, (str, bytes)):   # repeated
            return len(value) > 0
        return target.HasField(self.field)


def _untype(role, name, graph_name):
    return Variant(f"{graph_name}.{role}.{name}.type", value_info(role, name, graph_name), "type")


def _empty_type(role, name, graph_name):
    def mutate(m):
        vi = value_info(role, name, graph_name)(m)
        vi.ClearField("type")
        vi.type.SetInParent()
    return Variant(f"{graph_name}.{role}.{name}.type_empty", sub(value_info(role, name, graph_name), "type"),
                   "tensor_type", mutate)


def variants():
    vs = []
    for f in ("producer_name", "producer_version", "domain", "model_version", "doc_string",
              "metadata_props", "functions", "training_info"):
        vs.append(Variant(f"model.{f}", model, f))
    vs.append(Variant("model.opset_import[''].domain", _opset(""), "domain"))
    for f in ("doc_string", "metadata_props", "value_info", "quantization_annotation"):
        vs.append(Variant(f"graph.{f}", graph("main"), f))
    vs.append(Variant("then.doc_string", graph("then"), "doc_string"))
    vs.append(Variant("loop_body.value_info", graph("loop_body"), "value_info"))
    # Subgraph outputs without a type (legal: subgraph types may be omitted), and `type {}`.
    for role, name, g in (("output", "then_o", "then"), ("output", "else_o", "else"),
                          ("output", "c_out", "loop_body"), ("output", "acc_out", "loop_body"),
                          ("output", "st_out", "scan_body"), ("output", "row_out", "scan_body"),
                          ("value_info", "acc_out", "loop_body"), ("value_info", "a", "main"),
                          ("output", "w_next", "algorithm"), ("output", "m", "outer_then")):
        vs.append(_untype(role, name, g))
    for role, name, g in (("output", "then_o", "then"), ("output", "acc_out", "loop_body"),
                          ("value_info", "a", "main")):
        vs.append(_empty_type(role, name, g))
    vi_x = value_info("input", "x")
    vs += [Variant("input.x.doc_string", vi_x, "doc_string"),
           Variant("input.x.metadata_props", vi_x, "metadata_props"),
           Variant("input.x.type.denotation", sub(vi_x, "type"), "denotation"),
           Variant("input.x.dim0.denotation", dim("input", "x", 0), "denotation"),
           Variant("input.x.dim0.dim_param", dim("input", "x", 0), "dim_param"),
           Variant("value_info.a.doc_string", value_info("value_info", "a"), "doc_string"),
           Variant("value_info.a.shape", sub(value_info("value_info", "a"), "type", "tensor_type"), "shape"),
           Variant("value_info.a.dim1.denotation", dim("value_info", "a", 1), "denotation"),
           Variant("then.output.then_o.doc_string", value_info("output", "then_o", "then"), "doc_string"),
           Variant("outer_then.output.m.doc_string", value_info("output", "m", "outer_then"), "doc_string"),
           Variant("input.cond.shape", sub(value_info("input", "cond"), "type", "tensor_type"), "shape"),
           Variant("value_info.k.shape", sub(value_info("value_info", "k"), "type", "tensor_type"), "shape")]
    vs += [Variant("node.add0.name", node("a"), "name"),
           Variant("node.add0.domain", node("a"), "domain"),
           Variant("node.add0.doc_string", node("a"), "doc_string"),
           Variant("node.add0.metadata_props", node("a"), "metadata_props"),
           Variant("node.then_add.name", node("then_o"), "name"),
           Variant("attr.konst.value.doc_string", attr("k", "value"), "doc_string"),
           Variant("attr.konst.value.t.name", sub(attr("k", "value"), "t"), "name"),
           Variant("attr.konst.value.t.doc_string", sub(attr("k", "value"), "t"), "doc_string"),
           Variant("attr.then_const.value.t.name", sub(attr("then_c", "value"), "t"), "name"),
           Variant("initializer.w.doc_string", initializer("w"), "doc_string")]
    vs += [Variant("function.doc_string", _function_loc, "doc_string"),
           Variant("function.value_info", _function_loc, "value_info"),
           Variant("function.metadata_props", _function_loc, "metadata_props"),
           Variant("training_info.update_binding", lambda m: m.training_info[0] if m.training_info else None,
                   "update_binding")]
    return vs


def main(out_dir):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(base_model(), out / "base.onnx")
    for v in variants():
        onnx.save(v.build(), out / f"{v.name}.onnx")
    print(f"wrote the base model and {len(variants())} variants to {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_optional_fields.py OUT_DIR")
    main(sys.argv[1])
