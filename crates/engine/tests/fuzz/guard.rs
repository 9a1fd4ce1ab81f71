//! An allocator that watches the readers: it records the largest single allocation of the
//! input being read, and refuses one so large that it could only come from trusting a count in
//! the input (printing that input first, since the refusal aborts the process).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

/// Beyond this, an allocation is refused outright (the machine may not have it to give).
const REFUSE: usize = 1 << 30;

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static BIGGEST: Cell<usize> = const { Cell::new(0) };
    static INPUT: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

pub struct Guard;

/// Start watching the allocations made while `input` is read.
pub fn begin(input: &str) {
    INPUT.with(|i| i.set((input.as_ptr() as usize, input.len())));
    BIGGEST.with(|b| b.set(0));
    WATCHING.with(|w| w.set(true));
}

/// Stop watching; the largest single allocation since [`begin`].
pub fn end() -> usize {
    WATCHING.with(|w| w.set(false));
    BIGGEST.with(|b| b.get())
}

fn note(size: usize) -> bool {
    // `try_with`: the allocator also runs while thread-locals are torn down.
    let watching = WATCHING.try_with(|w| w.get()).unwrap_or(false);
    if !watching {
        return true;
    }
    let _ = BIGGEST.try_with(|b| b.set(b.get().max(size)));
    if size < REFUSE {
        return true;
    }
    let (ptr, len) = INPUT.try_with(|i| i.get()).unwrap_or((0, 0));
    // SAFETY: `begin` stored the address and length of a `&str` that outlives the read.
    let input = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
    let mut err = std::io::stderr();
    let _ = err.write_all(b"fuzz: refusing an allocation of over 1 GiB while reading this input:\n");
    let _ = err.write_all(input);
    let _ = err.write_all(b"\n");
    false
}

// SAFETY: every call forwards to the system allocator unchanged, or returns null (refusal).
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if note(layout.size()) {
            System.alloc(layout)
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if note(layout.size()) {
            System.alloc_zeroed(layout)
        } else {
            std::ptr::null_mut()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if note(new_size) {
            System.realloc(ptr, layout, new_size)
        } else {
            std::ptr::null_mut()
        }
    }
}
