//! The non-tensor objects schemas name: `Generator` (a random-number
//! generator, shared by handle), `Stream` and `QScheme`.

use super::Device;
use crate::random::{CpuGenerator, DEFAULT_SEED};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

/// `torch.Generator`: a random-number generator. A handle: clones share the
/// same state (as Python references to one generator do).
///
/// ```
/// use opforge::{Device, Generator};
/// let g = Generator::new(Device::Cpu);
/// g.manual_seed(42);
/// let same = g.clone();
/// assert_eq!(same.initial_seed(), 42);
/// assert!(same == g && Generator::new(Device::Cpu) != g);
/// ```
#[derive(Clone)]
pub struct Generator(Arc<GeneratorInner>);

struct GeneratorInner {
    device: Device,
    /// PyTorch's CPU generator state (mt19937 and the cached normal samples).
    state: Mutex<CpuGenerator>,
}

impl Generator {
    /// A generator for `device`, seeded with PyTorch's default seed (67280421310721).
    pub fn new(device: Device) -> Generator {
        Generator(Arc::new(GeneratorInner {
            device,
            state: Mutex::new(CpuGenerator::new(DEFAULT_SEED)),
        }))
    }

    /// The process-wide default CPU generator (`torch.default_generator`),
    /// which factories without `generator=` draw from.
    pub fn default_cpu() -> &'static Generator {
        static DEFAULT: OnceLock<Generator> = OnceLock::new();
        DEFAULT.get_or_init(|| Generator::new(Device::Cpu))
    }

    /// Reseeds the generator (`manual_seed`): PyTorch's engine takes the low
    /// 32 bits; `initial_seed` returns the whole seed.
    pub fn manual_seed(&self, seed: u64) {
        self.with_state(|g| g.set_seed(seed));
    }

    /// The seed it was last seeded with (`initial_seed`).
    pub fn initial_seed(&self) -> u64 {
        self.with_state(|g| g.seed())
    }

    /// The next 64 random bits (`random64()`: two 32-bit draws, high half first).
    pub fn next_u64(&self) -> u64 {
        self.with_state(|g| g.random64())
    }

    /// Runs `f` on the generator's state, locked once (as PyTorch's kernels
    /// hold the generator's mutex for a whole fill).
    pub fn with_state<R>(&self, f: impl FnOnce(&mut CpuGenerator) -> R) -> R {
        f(&mut self.0.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Its device.
    pub fn device(&self) -> Device {
        self.0.device
    }
}

impl PartialEq for Generator {
    /// The same generator (identity).
    fn eq(&self, other: &Generator) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<torch._C.Generator object on {}>", self.device())
    }
}

/// `torch.Stream`: a stream of work on a device, by id (the CPU has one, id 0).
///
/// ```
/// use opforge::{Device, Stream};
/// assert_eq!(Stream::default_for(Device::Cpu), Stream { id: 0, device: Device::Cpu });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stream {
    /// The stream id on its device.
    pub id: i64,
    /// The device.
    pub device: Device,
}

impl Stream {
    /// The default stream of `device`.
    pub fn default_for(device: Device) -> Stream {
        Stream { id: 0, device }
    }
}

/// `torch.qscheme`: how a quantized tensor maps integers to real values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QScheme {
    /// `torch.per_tensor_affine`
    PerTensorAffine,
    /// `torch.per_channel_affine`
    PerChannelAffine,
    /// `torch.per_tensor_symmetric`
    PerTensorSymmetric,
    /// `torch.per_channel_symmetric`
    PerChannelSymmetric,
    /// `torch.per_channel_affine_float_qparams`
    PerChannelAffineFloatQParams,
}

impl QScheme {
    /// Its Python name (`per_tensor_affine`).
    pub fn name(self) -> &'static str {
        match self {
            QScheme::PerTensorAffine => "per_tensor_affine",
            QScheme::PerChannelAffine => "per_channel_affine",
            QScheme::PerTensorSymmetric => "per_tensor_symmetric",
            QScheme::PerChannelSymmetric => "per_channel_symmetric",
            QScheme::PerChannelAffineFloatQParams => "per_channel_affine_float_qparams",
        }
    }
}
