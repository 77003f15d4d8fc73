//! Random programs of views and in-place operators (`opforge_tests::view_programs`)
//! built from the fuzzer's bytes, each byte one of the generator's choices:
//! functionalized, a program gives what PyTorch's rules work out of its
//! eager run (`expected_functionalized`: the same outputs, inputs and
//! failures, but for PyTorch's documented differences), and where those
//! rules are not eager's (a write into elements that share memory) it still
//! runs without a panic; its JSON form reads back as the same program.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opforge_tests::view_programs::{
    differences, expected_functionalized, generate, run, Bytes, Mode, Program,
};

fuzz_target!(|data: &[u8]| {
    opforge::set_allocation_limit(Some(16 << 20));
    let p = generate(&mut Bytes::new(data));
    assert_eq!(Program::from_json(&p.to_json()).as_ref(), Ok(&p));
    let func = run(&p, Mode::Functionalized).expect("a generated program runs");
    if let Some(want) = expected_functionalized(&p).expect("a generated program runs") {
        let d = differences(&want, &func);
        assert!(d.is_empty(), "{}{}", p.describe(), d.join("\n"));
    }
});
