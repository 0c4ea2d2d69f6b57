//! Host arrays natively: Rust slices and vectors, of f32 or of f16 bits. The browser's are
//! JavaScript typed arrays (`js/array.rs`).

use std::rc::Rc;

use super::host::{Arg, HostArray, OwnedArray};
use super::numbers::{CpuData, Numbers, Upload};
use crate::call::dtype::Dtype;
use crate::call::error::Error;
use crate::call::numbers::Len;

/// The numbers a host array holds: f32, or f16 as its bits.
trait Element: Copy + 'static {
    const DTYPE: Dtype;
    fn cpu(v: Vec<Self>) -> CpuData;
    fn numbers(v: &[Self]) -> Numbers<'_>;
}

macro_rules! element {
    ($t:ty, $dtype:ident) => {
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$dtype;
            fn cpu(v: Vec<$t>) -> CpuData {
                CpuData::$dtype(v)
            }
            fn numbers(v: &[$t]) -> Numbers<'_> {
                Numbers::$dtype(v)
            }
        }
    };
}
element!(f32, F32);
element!(u16, F16);

impl Len for &[u16] {
    fn len(&self) -> usize {
        <[u16]>::len(self)
    }
}

impl<E: Element> Len for Vec<E> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

macro_rules! host_array {
    ($t:ty, $e:ty) => {
        impl HostArray for $t {
            fn upload(&self, to: &dyn Upload) -> Result<(), String> {
                to.write(<$e as Element>::numbers(&self[to.range()]))
            }

            fn dtype(&self) -> Dtype {
                <$e as Element>::DTYPE
            }

            fn detach(&self) -> Arg<OwnedArray> {
                Arg::Host(Rc::new(self.to_vec()))
            }

            fn to_cpu(&self, _: &str) -> Result<CpuData, Error> {
                Ok(<$e as Element>::cpu(self.to_vec()))
            }
        }
    };
}
host_array!(&[f32], f32);
host_array!(&[u16], u16);
host_array!(Vec<f32>, f32);
host_array!(Vec<u16>, u16);
