//! Functionalization (`opforge::functionalize`) through the public API:
//! graphs as PyTorch 2.15's `make_fx(functionalize(f,
//! remove="mutations_and_views"))` records them (the expected code below is
//! PyTorch's, placeholders renamed `arg0_1` as the corpus names them), and
//! values as the eager program computes them.

use opforge::functionalize::{functionalize, is_functional};
use opforge::trace::{trace, Graph, TracingMode};
use opforge::{torch, Result, Scalar, Tensor, Value};

fn t(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn x34() -> Tensor {
    t(
        &(0..12).map(|i| i as f32 * 0.5 - 2.0).collect::<Vec<_>>(),
        &[3, 4],
    )
}

fn values(v: &Value) -> Vec<f32> {
    v.as_tensor().expect("a tensor").to_vec::<f32>().unwrap()
}

fn traced(f: impl Fn(&[Value]) -> Result<Vec<Value>> + Copy, inputs: &[Value]) -> Graph {
    trace(functionalize(f), inputs, TracingMode::Real).unwrap()
}

/// The program run eagerly, functionalized, and as its functional graph
/// re-executed: the same values (on fresh copies of the inputs), and the
/// inputs written alike.
fn agree(f: impl Fn(&[Value]) -> Result<Vec<Value>> + Copy, inputs: &[Tensor]) {
    let fresh = || -> Vec<Value> {
        inputs
            .iter()
            .map(|x| Value::Tensor(x.deep_clone().unwrap()))
            .collect()
    };
    let (e_in, f_in, g_in) = (fresh(), fresh(), fresh());
    let eager = f(&e_in).unwrap();
    let func = functionalize(f)(&f_in).unwrap();
    let graph = traced(f, &fresh()).run(&g_in).unwrap();
    for ((e, fv), g) in eager.iter().zip(&func).zip(&graph) {
        assert!(!is_functional(fv.as_tensor().unwrap()));
        assert_eq!(values(e), values(fv));
        assert_eq!(values(e), values(g));
    }
    for ((e, fv), g) in e_in.iter().zip(&f_in).zip(&g_in) {
        assert_eq!(values(e), values(fv));
        assert_eq!(values(e), values(g));
    }
}

fn arg(v: &[Value], i: usize) -> Tensor {
    v[i].as_tensor().expect("a tensor").clone()
}

/// A write through a view of a view: the outer view is put back by the
/// inner's inverse after the outer's (`select_scatter`, then
/// `transpose_copy`), and the written view is made again from the new base.
#[test]
fn a_write_through_two_views_goes_back_through_both_inverses() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let a = opforge::ops::clone(&arg(v, 0), None)?;
        let b = a.transpose(0, 1)?;
        let mut c = b.select(0, 1)?;
        c.mul_(&Tensor::wrapped_number(Scalar::Int(2)))?;
        Ok(vec![Value::Tensor(a)])
    };
    let g = traced(f, &[Value::Tensor(x34())]);
    assert_eq!(
        g.to_string(),
        "def forward(self, arg0_1):\n    \
         clone = torch.ops.aten.clone.default(arg0_1);  arg0_1 = None\n    \
         transpose_copy = torch.ops.aten.transpose_copy.int(clone, 0, 1)\n    \
         select_copy = torch.ops.aten.select_copy.int(transpose_copy, 0, 1);  transpose_copy = None\n    \
         mul = torch.ops.aten.mul.Tensor(select_copy, 2);  select_copy = None\n    \
         transpose_copy_1 = torch.ops.aten.transpose_copy.int(clone, 0, 1);  clone = None\n    \
         select_scatter = torch.ops.aten.select_scatter.default(transpose_copy_1, mul, 0, 1);  transpose_copy_1 = mul = None\n    \
         transpose_copy_2 = torch.ops.aten.transpose_copy.int(select_scatter, 0, 1);  select_scatter = None\n    \
         transpose_copy_3 = torch.ops.aten.transpose_copy.int(transpose_copy_2, 0, 1)\n    \
         select_copy_1 = torch.ops.aten.select_copy.int(transpose_copy_3, 0, 1);  transpose_copy_3 = select_copy_1 = None\n    \
         return (transpose_copy_2,)\n"
    );
    agree(f, &[x34()]);
}

/// An in-place view (`squeeze_`) is a view step of its tensor: the
/// step's `*_copy` of its value; a write through it goes back through each
/// step's inverse (`unsqueeze_copy` for the squeeze, `squeeze_copy` for the
/// unsqueeze, `view_copy` to the base's sizes).
#[test]
fn an_in_place_view_adds_a_view_step() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let a = opforge::ops::clone(&arg(v, 0), None)?;
        let mut w = a.view(&[2, 6])?.unsqueeze(0)?;
        w.squeeze_dim_(0)?;
        w.add_(&Tensor::wrapped_number(Scalar::Int(1)))?;
        Ok(vec![Value::Tensor(a), Value::Tensor(w)])
    };
    let g = traced(f, &[Value::Tensor(x34())]);
    assert_eq!(
        g.to_string(),
        "def forward(self, arg0_1):\n    \
         clone = torch.ops.aten.clone.default(arg0_1);  arg0_1 = None\n    \
         view_copy = torch.ops.aten.view_copy.default(clone, [2, 6])\n    \
         unsqueeze_copy = torch.ops.aten.unsqueeze_copy.default(view_copy, 0);  view_copy = None\n    \
         squeeze_copy = torch.ops.aten.squeeze_copy.dim(unsqueeze_copy, 0);  unsqueeze_copy = None\n    \
         add = torch.ops.aten.add.Tensor(squeeze_copy, 1);  squeeze_copy = None\n    \
         view_copy_1 = torch.ops.aten.view_copy.default(clone, [2, 6]);  clone = None\n    \
         unsqueeze_copy_1 = torch.ops.aten.unsqueeze_copy.default(view_copy_1, 0);  view_copy_1 = unsqueeze_copy_1 = None\n    \
         unsqueeze_copy_2 = torch.ops.aten.unsqueeze_copy.default(add, 0);  add = None\n    \
         squeeze_copy_1 = torch.ops.aten.squeeze_copy.dim(unsqueeze_copy_2, 0);  unsqueeze_copy_2 = None\n    \
         view_copy_2 = torch.ops.aten.view_copy.default(squeeze_copy_1, [3, 4]);  squeeze_copy_1 = None\n    \
         view_copy_3 = torch.ops.aten.view_copy.default(view_copy_2, [2, 6])\n    \
         unsqueeze_copy_3 = torch.ops.aten.unsqueeze_copy.default(view_copy_3, 0);  view_copy_3 = None\n    \
         squeeze_copy_2 = torch.ops.aten.squeeze_copy.dim(unsqueeze_copy_3, 0);  unsqueeze_copy_3 = None\n    \
         return (view_copy_2, squeeze_copy_2)\n"
    );
    agree(f, &[x34()]);
}

/// `out=`: the functional operator, then the `out` input written back by
/// `copy_`; the result is the functional operator's.
#[test]
fn an_out_argument_is_written_back_by_copy() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let mut z = arg(v, 2);
        let r = opforge::ops::add_out(&arg(v, 0), &arg(v, 1), Scalar::Int(1), &mut z)?;
        Ok(vec![Value::Tensor(r)])
    };
    let xs = [
        t(&[1.0, 2.0], &[2]),
        t(&[0.5, 0.25], &[2]),
        t(&[9.0, 9.0], &[2]),
    ];
    let inputs: Vec<Value> = xs.iter().cloned().map(Value::Tensor).collect();
    let g = traced(f, &inputs);
    assert_eq!(
        g.to_string(),
        "def forward(self, arg0_1, arg1_1, arg2_1):\n    \
         add = torch.ops.aten.add.Tensor(arg0_1, arg1_1);  arg0_1 = arg1_1 = None\n    \
         copy_ = torch.ops.aten.copy_.default(arg2_1, add);  arg2_1 = copy_ = None\n    \
         return (add,)\n"
    );
    agree(f, &xs);
}

/// Views of views without writes: `*_copy` all the way.
#[test]
fn views_become_copies() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let a = opforge::ops::clone(&arg(v, 0), None)?;
        let e = a.unsqueeze(0)?.expand(&[2, 3, 4])?;
        Ok(vec![Value::Tensor(e.sum()?)])
    };
    let g = traced(f, &[Value::Tensor(x34())]);
    assert_eq!(
        g.targets(),
        [
            "aten.clone.default",
            "aten.unsqueeze_copy.default",
            "aten.expand_copy.default",
            "aten.sum.default"
        ]
    );
    agree(f, &[x34()]);
}

/// A write through each kind of view the runtime has, checked against the
/// eager program: each view's inverse puts the write back where eager
/// aliasing puts it.
#[test]
fn writes_through_every_view_land_where_eager_ones_do() {
    type View = fn(&Tensor) -> Result<Tensor>;
    let views: [(&str, View); 10] = [
        ("select", |a| a.select(1, 2)),
        ("slice", |a| {
            opforge::ops::slice_Tensor(a, 1, Some(1), Some(3), 1)
        }),
        ("transpose", |a| a.transpose(0, 1)),
        ("t", |a| a.t()),
        ("permute", |a| a.permute(&[1, 0])),
        ("view", |a| a.view(&[4, 3])),
        ("unsqueeze", |a| a.unsqueeze(1)),
        ("squeeze", |a| a.unsqueeze(0)?.squeeze_dim(0)),
        ("detach", |a| a.detach()),
        ("expand", |a| a.select(0, 0)?.unsqueeze(0)?.expand(&[1, 4])),
    ];
    for (name, view) in views {
        let f = move |v: &[Value]| -> Result<Vec<Value>> {
            let a = opforge::ops::clone(&arg(v, 0), None)?;
            let mut w = view(&a)?;
            w.mul_scalar_(Scalar::Int(3))?;
            w.add_scalar_(Scalar::Int(1))?;
            Ok(vec![Value::Tensor(a), Value::Tensor(w)])
        };
        let eager = f(&[Value::Tensor(x34())]).unwrap();
        let func = functionalize(f)(&[Value::Tensor(x34())]).unwrap();
        for (e, fv) in eager.iter().zip(&func) {
            assert_eq!(values(e), values(fv), "{name}");
        }
    }
}

/// An in-place call keeps its errors: the write is checked on meta tensors
/// before the functional operator (which would broadcast) runs. PyTorch's
/// meta kernel of an in-place binary operator words the error its own way
/// (`torch/_refs`), and so does its functionalization.
#[test]
fn an_in_place_call_raises_what_it_raises_eagerly() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let mut a = arg(v, 0);
        a.add_(&arg(v, 1))?;
        Ok(vec![Value::Tensor(a)])
    };
    let inputs = [
        Value::Tensor(t(&[1.0], &[1])),
        Value::Tensor(t(&[1.0, 2.0, 3.0], &[3])),
    ];
    let eager = f(&inputs).unwrap_err();
    let func = functionalize(f)(&inputs).unwrap_err();
    assert_eq!(
        eager.to_string(),
        "output with shape [1] doesn't match the broadcast shape [3]"
    );
    assert_eq!(
        func.to_string(),
        "output with shape torch.Size([1]) doesn't match the broadcast shape (3,)"
    );
    // A plain tensor written from a functional one: PyTorch's refusal.
    let outside = t(&[0.0, 0.0, 0.0], &[3]);
    let g = |v: &[Value]| -> Result<Vec<Value>> {
        let mut o = outside.clone();
        o.add_(&arg(v, 0))?;
        Ok(vec![])
    };
    let e = functionalize(g)(&[Value::Tensor(t(&[1.0, 2.0, 3.0], &[3]))]).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "mutating a non-functional tensor with a functional tensor is not allowed"
        ),
        "{e}"
    );
}

/// Factories inside the program make functional tensors: writing one is
/// functionalized too.
#[test]
fn factories_inside_make_functional_tensors() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let mut z = torch::zeros(&[2])?;
        z.add_(&arg(v, 0))?;
        Ok(vec![Value::Tensor(z)])
    };
    let g = traced(f, &[Value::Tensor(t(&[1.0, 2.0], &[2]))]);
    assert_eq!(g.targets(), ["aten.zeros.default", "aten.add.Tensor"]);
    functionalize(|_: &[Value]| {
        assert!(is_functional(&torch::zeros(&[2])?));
        Ok(vec![])
    })(&[])
    .unwrap();
    agree(f, &[t(&[1.0, 2.0], &[2])]);
}

/// A functional view carries the sizes, strides and offset the eager view
/// has (PyTorch's "Note [Propagating strides in the functionalization
/// pass]"), so `contiguous` of a transposed view copies, as eagerly: a
/// later write to the base does not reach it. PyTorch 2.15 records `t`,
/// `clone(t, memory_format=torch.contiguous_format)`, `add`, `copy_` (with
/// views removed, `t_copy` for `t`).
#[test]
fn contiguous_of_a_transposed_view_copies_as_eagerly() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let mut x = arg(v, 0);
        let c = x.t()?.contiguous()?;
        x.add_(&Tensor::wrapped_number(Scalar::Int(1)))?;
        Ok(vec![Value::Tensor(c), Value::Tensor(x)])
    };
    let x = t(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]);
    let out = functionalize(f)(&[Value::Tensor(x.deep_clone().unwrap())]).unwrap();
    assert_eq!(values(&out[0]), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let g = traced(f, &[Value::Tensor(x.clone())]);
    assert_eq!(
        g.to_string(),
        "def forward(self, arg0_1):\n    \
         t_copy = torch.ops.aten.t_copy.default(arg0_1)\n    \
         clone = torch.ops.aten.clone.default(t_copy, memory_format = torch.contiguous_format);  t_copy = None\n    \
         add = torch.ops.aten.add.Tensor(arg0_1, 1)\n    \
         copy_ = torch.ops.aten.copy_.default(arg0_1, add);  arg0_1 = copy_ = None\n    \
         return (clone, add)\n"
    );
    agree(f, &[x]);
}

/// `reshape` of a view that cannot be viewed so is PyTorch's
/// `_unsafe_view(clone(…, contiguous_format), shape)`, a copy, as eagerly;
/// `view` of it fails with eager's message.
#[test]
fn reshape_of_a_permuted_view_copies_and_view_of_it_fails() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let mut x = arg(v, 0);
        let r = x.permute(&[1, 0])?.reshape(&[-1])?;
        x.add_(&Tensor::wrapped_number(Scalar::Int(1)))?;
        Ok(vec![Value::Tensor(r)])
    };
    let x = t(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]);
    let out = functionalize(f)(&[Value::Tensor(x.deep_clone().unwrap())]).unwrap();
    assert_eq!(values(&out[0]), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let g = traced(f, &[Value::Tensor(x.clone())]);
    assert_eq!(
        g.targets(),
        [
            "aten.permute_copy.default",
            "aten.clone.default",
            "aten._unsafe_view.default",
            "aten.add.Tensor",
            "aten.copy_.default"
        ]
    );
    agree(f, &[x]);
    let v = |v: &[Value]| -> Result<Vec<Value>> { Ok(vec![Value::Tensor(arg(v, 0).view(&[-1])?)]) };
    let xt = opforge::ops::t(&torch::zeros(&[2, 3]).unwrap()).unwrap();
    let e = functionalize(v)(&[Value::Tensor(xt)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
    );
}

/// An in-place view of an input changes the input's shape, as eagerly:
/// PyTorch's `_propagate_functional_input_mutation` restrides the input
/// (`as_strided_` to the new sizes and strides) before copying the values
/// in; PyTorch 2.15 records exactly this graph.
#[test]
fn an_in_place_view_of_an_input_reaches_the_input() {
    let f = |v: &[Value]| -> Result<Vec<Value>> {
        let mut x = arg(v, 0);
        x.squeeze_dim_(1)?;
        Ok(vec![Value::Tensor(
            x.add(&Tensor::wrapped_number(Scalar::Int(1)))?,
        )])
    };
    let x = t(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 1, 3]);
    let out = functionalize(f)(&[Value::Tensor(x.clone())]).unwrap();
    assert_eq!(values(&out[0]), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!((x.shape(), x.strides()), (vec![2, 3], vec![3, 1]));
    assert_eq!(values(&Value::Tensor(x)), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let g = traced(f, &[Value::Tensor(t(&[0.0; 6], &[2, 1, 3]))]);
    assert_eq!(
        g.to_string(),
        "def forward(self, arg0_1):\n    \
         squeeze_copy = torch.ops.aten.squeeze_copy.dim(arg0_1, 1)\n    \
         add = torch.ops.aten.add.Tensor(squeeze_copy, 1)\n    \
         as_strided_ = torch.ops.aten.as_strided_.default(arg0_1, [2, 3], [3, 1]);  arg0_1 = None\n    \
         copy_ = torch.ops.aten.copy_.default(as_strided_, squeeze_copy);  as_strided_ = squeeze_copy = copy_ = None\n    \
         return (add,)\n"
    );
    // A write after the in-place view: the broadcast is checked against
    // the new shape, as eagerly.
    let g = |v: &[Value]| -> Result<Vec<Value>> {
        let mut x = arg(v, 0);
        x.squeeze_dim_(1)?;
        x.add_(&arg(v, 1))?;
        Ok(vec![])
    };
    let x = t(&[0.0; 6], &[2, 1, 3]);
    functionalize(g)(&[
        Value::Tensor(x.clone()),
        Value::Tensor(t(&[1.0; 6], &[2, 3])),
    ])
    .unwrap();
    assert_eq!(
        (x.shape(), values(&Value::Tensor(x))),
        (vec![2, 3], vec![1.0; 6])
    );
}
