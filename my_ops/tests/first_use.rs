//! The first use of the dispatcher, from many threads at once: a thread that
//! reaches this crate's operators while another builds the dispatcher finds
//! them with their kernels (they were once handed out before their kernels
//! were resolved, and such a call failed with "no kernel").

use opforge::Tensor;
use std::sync::{Arc, Barrier};

#[test]
fn threads_that_race_the_dispatchers_first_build_find_the_kernels() {
    let n = 8;
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
                barrier.wait();
                for _ in 0..200 {
                    let y = my_ops::at::mylib_scale(&x, 2.0).unwrap();
                    assert_eq!(y.to_vec::<f32>().unwrap(), [2.0, -4.0]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
