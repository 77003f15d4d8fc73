use opforge::{torch, Tensor};
use std::time::Instant;
fn best<F: FnMut()>(mut f: F, reps: usize) -> f64 {
    let mut b = f64::MAX;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        b = b.min(t.elapsed().as_secs_f64());
    }
    b * 1e3
}
fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1);
    opforge::set_num_threads(threads).unwrap();
    let n = 1_000_000usize;
    let v: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 + 0.5)
        .collect();
    let a = Tensor::from_vec(v.clone(), &[n]).unwrap();
    let b = Tensor::from_vec(v.clone(), &[n]).unwrap();
    let m = Tensor::from_vec(v.clone(), &[1000, 1000]).unwrap();
    let mt = m.t().unwrap();
    println!(
        "add 1e6: {:.3} ms",
        best(
            || {
                torch::add(&a, &b).unwrap();
            },
            20
        )
    );
    println!(
        "add_t 1e6: {:.3} ms",
        best(
            || {
                torch::add(&m, &mt).unwrap();
            },
            20
        )
    );
    println!(
        "mul 1e6: {:.3} ms",
        best(
            || {
                torch::mul(&a, &b).unwrap();
            },
            20
        )
    );
    println!(
        "exp 1e6: {:.3} ms",
        best(
            || {
                torch::exp(&a).unwrap();
            },
            10
        )
    );
    println!(
        "sum 1e6: {:.3} ms",
        best(
            || {
                torch::sum(&a).unwrap();
            },
            10
        )
    );
    let s = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let t0 = Instant::now();
    for _ in 0..100000 {
        torch::add(&s, &s).unwrap();
    }
    println!(
        "add 1: {:.0} ns",
        t0.elapsed().as_secs_f64() * 1e9 / 100000.0
    );
}
