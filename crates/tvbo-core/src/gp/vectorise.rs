//! Loops compiled for the widest vectors the CPU has, chosen at run time.
//!
//! The release build targets the portable x86-64 (two f64 lanes). A hot loop written in
//! plain IEEE arithmetic over slices vectorises to whatever the code is compiled for, so
//! [`widest_vectors!`] compiles it three times (portable, AVX2, AVX-512) and picks one per
//! call. No step may use a fused multiply-add or an instruction only some targets have,
//! so that every variant gives the same bits on every machine (a refit on another
//! replica agrees with this one); Rust never fuses `a * b + c` by itself.

/// `fn name(args) -> ret = body;` defines `name`, which runs `body` (an
/// `#[inline(always)]` function of those arguments, whose callees are inlined too)
/// compiled with AVX-512F where the CPU has it, else with AVX2, else for the portable
/// target.
macro_rules! widest_vectors {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? = $body:path;) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F, checked just above.
                    return unsafe { avx512($($arg),*) };
                }
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU has AVX2, checked just above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

pub(crate) use widest_vectors;
