//! Registered memory is shared with the device: who may touch it when, and why every access the
//! safe API makes is free of data races.
//!
//! ```
//! use typed_verbs::{Access, Context, Mr, PageBuf, Pd};
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
//! // Safe accesses to registered memory are byte-wise atomic copies: no data race with the device.
//! mr.write(0, b"in")?;
//! let mut out = [0; 2];
//! mr.read(0, &mut out)?;
//! assert_eq!(&out, b"in");
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page lists the promises about registered
//! memory that rest on this model; [`crate::safety`] gives the whole argument.
//!
//! # The model
//!
//! A memory region ([`Mr`](crate::mr::Mr)) covers memory that two parties use at once: the program
//! and the device. The device reads and writes it on its own, at any time while the region is
//! registered, whenever a work request or a peer names it: a posted receive, a peer's RDMA write,
//! RDMA read or atomic, a local send gathering from it. For the Rust memory model the device is
//! *another thread*: on a real device its accesses are DMA, outside the abstract machine; on the
//! [software device](crate::software) they are Rust code running in whichever thread posts,
//! modifies or fires the RNR timer.
//!
//! 1. **Who owns the memory.** An owned region (`Mr::new` over a [`PageBuf`](crate::mr::PageBuf),
//!    [`HugeBuf`](crate::mr::HugeBuf), `Vec<u8>` or `Box<[u8]>`) owns its buffer from
//!    registration until `ibv_dereg_mr` succeeds, and only then gives it back
//!    ([`Mr::destroy`](crate::mr::Mr::destroy)). A borrowed buffer is registered only inside
//!    [`Mr::scoped`](crate::mr::Mr::scoped), whose own stack frame deregisters it before the borrow
//!    ends, on every exit path. So the memory stays allocated and in place for as long as the
//!    device may use it, whatever the program leaks: forgetting an owned region leaks its
//!    buffer with it (the memory stays valid, registered, and unreachable by safe code),
//!    and a scoped region cannot be forgotten because the program never owns it.
//! 2. **How the program touches it.** While registered, the buffer is never handed out as a
//!    Rust reference (`&[u8]`, `&mut [u8]`, `&mut Vec<u8>`; a slot, below, is the one
//!    exception): the safe API reaches it only
//!    through [`Mr::read`](crate::mr::Mr::read) and [`Mr::write`](crate::mr::Mr::write), which copy with
//!    this module's two primitives.
//! 3. **How the device touches it.** The software device moves every payload into and out of
//!    registered memory with the same two primitives (gather for sends, scatter for receives
//!    and read responses, RDMA write and read, the 8 bytes of an atomic). A real device does
//!    its DMA outside the abstract machine; what it does is the device's contract (below).
//! 4. **The primitives.** `copy_from_shared` and `copy_to_shared` have the semantics of a
//!    loop in which *each byte on the shared side is one `Relaxed` [`AtomicU8`] load or store*
//!    (the byte-wise atomic memcpy of C++ proposal P1478); the private side is an ordinary
//!    access. All program and software-device accesses to registered memory are therefore
//!    atomic accesses of the same size, one byte, and two atomic accesses never form a data
//!    race (C++20 \[intro.races\], which Rust's atomics follow). Concurrent copies may
//!    interleave byte by byte: a `read` racing a receive may see part of the old and part of the
//!    new message, exactly as with a real device. The data is then whatever the bytes were,
//!    never undefined behaviour; ordering it is the completions' job (poll the receive's
//!    completion before reading what it delivered).
//! 5. **Atomics.** An IB atomic (fetch-and-add, compare-and-swap) is an 8-byte read-modify-write.
//!    Doing it with an `AtomicU64` on memory that `Mr::write` accesses byte-wise would make an
//!    8-byte atomic write race 1-byte atomic accesses: mixed-size atomic writes are not allowed
//!    by the model. The software device instead takes a device-wide lock among its atomics and
//!    reads and writes the 8 bytes with the byte-wise primitives. That is exactly the guarantee
//!    verbs give: atomics are atomic with respect to the HCA's other atomics only
//!    (`IBV_ATOMIC_HCA`, the `atomic_cap` the software device reports, as rxe does), not to
//!    the CPU's accesses; a program that writes the word while an atomic targets it gets some
//!    interleaving of bytes, which is a value, not UB.
//!
//! # Zero copy
//!
//! [`Mr::as_slice`](crate::mr::Mr::as_slice) looks at any region without a copy, and it is `unsafe`:
//! while the slice lives, nothing may write the range (no posted receive, no peer's RDMA write or
//! atomic naming it, no `Mr::write`, no other thread), because a `&[u8]` promises the compiler that
//! the bytes do not change.
//!
//! The safe zero copy is a [`Slot`](crate::Slot) ([`crate::slots`]): a region no peer can access,
//! split into disjoint slots, each owned by one `Slot` while not posted (a plain `&[u8]` or
//! `&mut [u8]`, the exception to point 2) and by the queue while posted (the device's accesses,
//! atomic on the software device). The two never overlap in time: posting moves the slot, and it
//! comes back only with its completion, which orders the device's accesses before the program's
//! (the software device's ring is release/acquire; a real provider's poll reads the completion
//! after the DMA).
//!
//! # A real device's contract
//!
//! On a real device, the memory model cannot see the DMA. What the crate relies on is the verbs'
//! own guarantee: the device accesses a region only while it is registered (after a successful
//! `ibv_dereg_mr`, no access to it is made), and only the ranges that work requests and their
//! keys name. The program's side still uses atomic byte copies, so no two Rust accesses race,
//! and the compiler never assumes registered memory is unchanged between two accesses.
//!
//! # Why an `asm!` block is a byte-wise atomic copy (x86-64)
//!
//! Outside Miri, on x86-64, the primitives are one `rep movsb`. An inline assembly block is
//! sound when its effect on memory is one that Rust code could have had; the block is then
//! equivalent to that code. `rep movsb` reads each source byte once and writes each destination
//! byte once, and on x86-64 every aligned access of up to 8 bytes is single-copy atomic; a
//! byte (any address) is always aligned, so each byte is read and written atomically, and wider
//! accesses that fast-string microcode may use are atomic for each byte they contain. The order
//! in which the bytes are copied is unspecified (fast strings may reorder stores), which is what
//! `Relaxed` accesses to distinct locations allow: no order between them exists to keep. A
//! relaxed `AtomicU8` load or store compiles to a plain `mov` on x86-64, so the loop of atomic
//! bytes and the `rep movsb` have the same set of possible outcomes, and the block's effect is
//! expressible as those atomic operations. The direction flag is clear on entry to an `asm!`
//! block on x86 (the Rust reference guarantees it) and `rep movsb` leaves it and every other
//! flag unchanged. Elsewhere (other architectures, and under Miri, which cannot run assembly) the
//! primitives are that loop of [`AtomicU8::from_ptr`] loads and stores.
//!
//! # Race detectors
//!
//! Valgrind's helgrind and DRD see machine instructions, not the memory model: to them a relaxed
//! atomic access is a plain `mov`, so they report these copies (which are atomic) as races. The
//! two primitives are never inlined, so a suppression can name them:
//! `typed_verbs::dma::copy_from_shared` and `typed_verbs::dma::copy_to_shared`. Every other
//! access to registered memory in the crate goes through them, so a race such a tool reports
//! anywhere else is real.
//! The guide's [sanitizers](crate::guide::sanitizers) page lists the suppressions the crate's
//! valgrind runs use.
//!
//! [`AtomicU8`]: std::sync::atomic::AtomicU8
//! [`AtomicU8::from_ptr`]: std::sync::atomic::AtomicU8::from_ptr

/// Copies `len` bytes from shared (registered) memory at `src` into private memory at `dst`.
/// Each byte of `src` is read as one `Relaxed` `AtomicU8` load; `dst` is written normally.
///
/// # Safety
/// - `src..src + len` is valid for reads and stays allocated for the call, and every access
///   to it that may run concurrently is atomic (this module's primitives, or a device outside
///   the abstract machine).
/// - `dst..dst + len` is valid for writes, is not accessed by anyone else during the call, and
///   does not overlap `src..src + len`.
#[inline(never)]
pub(crate) unsafe fn copy_from_shared(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract, which is the one `copy_bytewise` states.
    unsafe { copy_bytewise(src, dst, len, SharedSide::Src) }
}

/// Copies `len` bytes from private memory at `src` into shared (registered) memory at `dst`.
/// Each byte of `dst` is written as one `Relaxed` `AtomicU8` store; `src` is read normally.
///
/// # Safety
/// - `dst..dst + len` is valid for writes and stays allocated for the call, and every access
///   to it that may run concurrently is atomic (this module's primitives, or a device outside
///   the abstract machine).
/// - `src..src + len` is valid for reads, is not written by anyone else during the call, and
///   does not overlap `dst..dst + len`.
#[inline(never)]
pub(crate) unsafe fn copy_to_shared(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract, which is the one `copy_bytewise` states.
    unsafe { copy_bytewise(src, dst, len, SharedSide::Dst) }
}

/// Which side of a copy is shared memory.
#[derive(Clone, Copy)]
enum SharedSide {
    Src,
    Dst,
}

/// # Safety
/// The side named by `shared` is valid for `len` bytes (reads for `Src`, writes for `Dst`) and
/// only accessed atomically by others during the call; the other side is valid, private for
/// the call, and does not overlap it.
#[cfg(all(target_arch = "x86_64", not(miri)))]
// Always inlined, also in debug builds: the copy must be in the body of `copy_to_shared` /
// `copy_from_shared`, the frames the sanitizer lane's helgrind suppression names.
#[inline(always)]
unsafe fn copy_bytewise(src: *const u8, dst: *mut u8, len: usize, _shared: SharedSide) {
    // SAFETY: the caller's contract makes every byte of both ranges valid for the access the
    // instruction makes. The block's effect is that of the byte loop in the portable
    // `copy_bytewise` (one Relaxed AtomicU8 access per byte of the shared side, a plain access
    // on the private side; the module docs say why), so it is expressible in Rust's memory
    // model. DF is clear on entry (Rust's asm! guarantee on x86), so the copy runs upwards;
    // `rep movsb` changes no flag and touches no stack; rcx, rsi, rdi are clobbered and
    // declared so.
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rcx") len => _,
            inout("rsi") src => _,
            inout("rdi") dst => _,
            options(nostack, preserves_flags),
        );
    }
}

/// # Safety
/// As for the x86-64 version.
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
#[inline]
unsafe fn copy_bytewise(src: *const u8, dst: *mut u8, len: usize, shared: SharedSide) {
    use std::sync::atomic::{AtomicU8, Ordering};
    for i in 0..len {
        // SAFETY: in range (the caller's contract). A byte is always aligned for AtomicU8, and
        // every concurrent access to the shared side is atomic, as `from_ptr` requires; the
        // private side is ours for the call.
        unsafe {
            match shared {
                SharedSide::Src => {
                    let b = AtomicU8::from_ptr(src.add(i).cast_mut()).load(Ordering::Relaxed);
                    dst.add(i).write(b);
                }
                SharedSide::Dst => {
                    let b = src.add(i).read();
                    AtomicU8::from_ptr(dst.add(i)).store(b, Ordering::Relaxed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_and_offset_both_ways() {
        let src: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 999] {
            for off in [0, 1, 3] {
                let mut dst = vec![0xeeu8; 1010];
                // SAFETY: both in range, distinct, private to this test.
                unsafe { copy_to_shared(src.as_ptr(), dst.as_mut_ptr().add(off), len) };
                assert_eq!(&dst[off..off + len], &src[..len]);
                assert!(dst[..off]
                    .iter()
                    .chain(&dst[off + len..])
                    .all(|&b| b == 0xee));
                let mut back = vec![0u8; len];
                // SAFETY: as above.
                unsafe { copy_from_shared(dst.as_ptr().add(off), back.as_mut_ptr(), len) };
                assert_eq!(back, &src[..len]);
            }
        }
    }
}
