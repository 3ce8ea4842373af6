//! The allocator of the programs that run simulations: the Python extension (`rdmalab run`,
//! `rdmalab.run`) and the engine's examples (`scenario_run`, `hpcc_run`, ...). A program
//! takes it by naming this crate (`use rdmalab_alloc as _;`); the engine library itself
//! leaves the choice to its user, and its tests keep the system allocator.
//!
//! Why: a large run touches a few lines of many small objects per packet (a QP, its
//! congestion-control group, the group's member list, the QP's posted messages), spread over
//! hundreds of megabytes. With 4 KiB pages nearly every such touch also misses the TLB. The
//! allocator is jemalloc (`tikv-jemallocator`) with `thp:always`: every extent it maps is
//! advised for transparent huge pages (`MADV_HUGEPAGE`), so that small objects share 2 MiB
//! pages. Where the kernel's THP mode is `never`, the advice does nothing.
//!
//! Measured in docs/benchmarks.md ("stop 62"). `_RJEM_MALLOC_CONF` overrides the options at
//! run time (`_RJEM_MALLOC_CONF=thp:default` keeps jemalloc but drops the advice).

/// jemalloc for every allocation of the program that links this crate.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read once when it starts (the C string `malloc_conf` of its manual,
/// under the prefix `tikv-jemalloc-sys` gives its symbols). `thp:always` advises huge pages
/// on every extent; `metadata_thp:auto` lets jemalloc's own tables use them once they grow.
#[used]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: Conf = Conf(c"thp:always,metadata_thp:auto".as_ptr());

/// A C string pointer that may sit in a static (it points at a constant).
#[repr(transparent)]
struct Conf(*const std::ffi::c_char);

// SAFETY: the pointer is to a `'static` C string literal, never written.
unsafe impl Sync for Conf {}

#[cfg(test)]
mod tests {
    use std::ffi::{c_char, c_void, CStr};

    /// A string option of the running jemalloc (this test binary's allocator is the crate's).
    fn option(name: &CStr) -> String {
        let mut value: *const c_char = std::ptr::null();
        let mut len = std::mem::size_of::<*const c_char>();
        let out = (&mut value as *mut *const c_char).cast::<c_void>();
        // SAFETY: `opt.*` string options are read as a `const char *` of that size.
        let rc = unsafe { tikv_jemalloc_sys::mallctl(name.as_ptr(), out, &mut len, std::ptr::null_mut(), 0) };
        assert_eq!(rc, 0, "mallctl {name:?}");
        // SAFETY: jemalloc returns a static nul-terminated string.
        unsafe { CStr::from_ptr(value) }.to_str().unwrap().to_owned()
    }

    #[test]
    fn jemalloc_took_the_options_and_advises_huge_pages() {
        let _ = vec![0u8; 1 << 20]; // jemalloc is running
        assert_eq!(option(c"opt.thp"), "always");
        assert_eq!(option(c"opt.metadata_thp"), "auto");
    }
}
