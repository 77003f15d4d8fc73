//! Builds API-level calls from fuzzer bytes: a binding of the runtime's API
//! table and positional and keyword arguments drawn from a palette of values
//! (tensors of every dtype, views that alias each other or overlap, meta
//! tensors, numbers at the edges, lists, dtypes, devices, strings).
//!
//! The same bytes always build the same call out of fresh tensors, so a target
//! can run one call down several paths and compare what each gives.

use opforge::argparse::{ApiBinding, ApiTable};
use opforge::{DType, Device, Layout, MemoryFormat, Tensor, Value};
use std::sync::OnceLock;

/// A reader of fuzzer bytes; zeros once they run out.
pub struct Gen<'a> {
    data: &'a [u8],
}

impl<'a> Gen<'a> {
    pub fn new(data: &'a [u8]) -> Gen<'a> {
        Gen { data }
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let hi = usize::from(self.byte());
        let lo = usize::from(self.byte());
        (hi << 8 | lo) % n
    }

    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }

    pub fn coin(&mut self) -> bool {
        self.byte() & 1 == 1
    }
}

/// The runtime's bindings, built once, with their names in a stable order.
pub fn table() -> &'static (ApiTable, Vec<String>) {
    static TABLE: OnceLock<(ApiTable, Vec<String>)> = OnceLock::new();
    TABLE.get_or_init(|| {
        let table = ApiTable::builtin();
        let mut names: Vec<String> = table.bindings.keys().cloned().collect();
        names.sort();
        (table, names)
    })
}

/// A table holding a fresh copy of one binding (an empty shape cache).
pub fn fresh_table(binding: &ApiBinding) -> ApiTable {
    let mut t = ApiTable::default();
    t.bindings.insert(binding.name.clone(), binding.clone());
    t
}

/// One call: the binding's name, positionals, keywords.
pub struct Call {
    pub api: String,
    pub args: Vec<Value>,
    pub kwargs: Vec<(String, Value)>,
}

const SHAPES: &[&[usize]] = &[&[], &[1], &[3], &[2, 3], &[3, 2], &[0], &[2, 1, 3], &[6]];
const INTS: &[i64] = &[0, 1, -1, 2, 3, -2, 6, 64, i64::MAX, i64::MIN, 1 << 33, -(1 << 40)];
const FLOATS: &[f64] = &[0.0, -0.0, 0.5, -1.5, 2.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, 1e-310];
const STRS: &[&str] = &["mean", "sum", "none", "floor", "trunc", "tanh", "x", ""];
const DTYPES: &[DType] = &[DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64];

struct Builder<'g, 'a> {
    g: &'g mut Gen<'a>,
    /// The last base tensor made: a later tensor may be a view of it.
    base: Option<Tensor>,
}

impl Builder<'_, '_> {
    fn tensor(&mut self) -> Tensor {
        if let Some(base) = self.base.clone() {
            if self.g.byte() % 3 == 0 {
                if let Some(v) = self.view(&base) {
                    return v;
                }
            }
        }
        let dtype = self.g.pick(DTYPES);
        let shape = self.g.pick(SHAPES);
        let n: usize = shape.iter().product();
        let t = if self.g.byte() % 16 == 0 {
            Tensor::try_zeros(shape, dtype, Device::Meta)
        } else {
            let vals: Vec<f64> = (0..n).map(|_| f64::from(self.g.byte() as i8) / 4.0).collect();
            let t = Tensor::from_vec(vals, shape).expect("n matches the shape");
            t.to_dtype_copy(dtype)
        };
        let t = t.expect("a small tensor");
        self.base = Some(t.clone());
        t
    }

    /// A view of `base`'s storage: a slice, a transpose, an expansion (elements
    /// shared) or an overlapping window.
    fn view(&mut self, base: &Tensor) -> Option<Tensor> {
        let n = base.storage().len();
        let (shape, strides, offset): (Vec<usize>, Vec<usize>, usize) = match self.g.byte() % 6 {
            0 => (vec![n.saturating_sub(1)], vec![1], 1),
            1 => (vec![n.saturating_sub(1)], vec![1], 0),
            2 => (vec![3, 2], vec![1, 3], 0),
            3 => (vec![2, n], vec![0, 1], 0),
            4 => (vec![2, 2], vec![1, 1], 0),
            _ => (vec![n / 2], vec![2], 0),
        };
        base.strided_view(&shape, &strides, offset).ok()
    }

    fn value(&mut self, depth: usize) -> Value {
        match self.g.byte() % 16 {
            0 => Value::None,
            1 => Value::Bool(self.g.coin()),
            2 => Value::Int(i64::from(self.g.byte() as i8)),
            3 => Value::Int(self.g.pick(INTS)),
            4 => Value::Float(self.g.pick(FLOATS)),
            5 => Value::Str(self.g.pick(STRS).to_string()),
            6..=8 => Value::Tensor(self.tensor()),
            9 => Value::IntList((0..self.g.below(4)).map(|_| i64::from(self.g.byte() % 5) - 1).collect()),
            10 => Value::FloatList((0..self.g.below(4)).map(|_| self.g.pick(FLOATS)).collect()),
            11 if depth < 3 => {
                Value::List((0..self.g.below(4)).map(|_| self.value(depth + 1)).collect())
            }
            12 => Value::DType(self.g.pick(DTYPES)),
            13 => match self.g.byte() % 4 {
                0 => Value::Device(Device::Cpu),
                1 => Value::Device(Device::Meta),
                2 => Value::Layout(Layout::Strided),
                _ => Value::MemoryFormat(self.g.pick(&[
                    MemoryFormat::Contiguous,
                    MemoryFormat::Preserve,
                    MemoryFormat::ChannelsLast,
                ])),
            },
            14 => Value::TensorList((0..self.g.below(3)).map(|_| self.tensor()).collect()),
            _ => Value::ScalarTypeCode(i64::from(self.g.byte() % 20)),
        }
    }
}

/// Bindings a comparison of paths must skip: none so far (every built-in
/// kernel is deterministic).
pub fn comparable(_api: &str) -> bool {
    true
}

/// The call the bytes describe.
pub fn call(data: &[u8]) -> Call {
    let (table, names) = table();
    let mut g = Gen::new(data);
    let api = g.pick(names);
    let binding = table.get(&api).expect("a name of the table");
    let mut b = Builder { g: &mut g, base: None };
    let nargs = b.g.below(5);
    let args = (0..nargs).map(|_| b.value(0)).collect();
    let mut kwargs = Vec::new();
    for _ in 0..b.g.below(3) {
        let sig = &binding.parser.signatures[b.g.below(binding.parser.signatures.len())];
        let name = if sig.params.is_empty() || b.g.byte() % 8 == 0 {
            b.g.pick(&["out", "dim", "x", "alpha", "dtype"]).to_string()
        } else {
            sig.params[b.g.below(sig.params.len())].name.clone()
        };
        kwargs.push((name, b.value(0)));
    }
    Call { api, args, kwargs }
}

/// A canonical text of a result, for comparing paths: values, dtypes, shapes
/// and strides of tensors; errors by class and message.
pub fn describe(r: &opforge::Result<Vec<Value>>) -> String {
    match r {
        Ok(vs) => vs.iter().map(describe_value).collect::<Vec<_>>().join("; "),
        Err(e) => format!("{}: {e}", e.python_class()),
    }
}

fn describe_value(v: &Value) -> String {
    match v {
        Value::Tensor(t) => format!("{t} shape={:?} strides={:?}", t.shape(), t.strides()),
        Value::TensorList(ts) => ts.iter().map(|t| describe_value(&Value::Tensor(t.clone()))).collect::<Vec<_>>().join(", "),
        other => format!("{other:?}"),
    }
}

/// Caps allocations at 16 MiB, so that absurd sizes are the allocator's error
/// rather than the fuzzer's out-of-memory reports.
pub fn cap_allocations() {
    opforge::set_allocation_limit(Some(16 << 20));
}
