//! Reusable memory for the future of a hook call behind `dyn`.
//!
//! A [`DynProcessor`](super::DynProcessor)'s `async` stream hook returns a future whose type
//! the chain does not know, so the future has to live on the heap. A [`FutureSlot`], kept by
//! the chain for each position, holds that memory from one chunk to the next: a call places
//! its future in the slot ([`FutureSlot::put`]), the chain polls it there and drops it there,
//! and the next call of that position reuses the memory. Only a future larger or more
//! aligned than any before it allocates.

use std::alloc::{self, Layout};
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

/// Memory for one future at a time, kept between calls: the second call of a position
/// finds the memory of the first (`reuses_its_memory_for_futures_that_fit`, below).
#[derive(Debug)]
pub struct FutureSlot {
    /// The memory, allocated with `layout`; dangling when `layout` has no size.
    ptr: NonNull<u8>,
    layout: Layout,
    /// A future placed here has not been dropped yet. Still set at the next `put` only when
    /// the [`InSlot`] that owned it was leaked: its memory must then stay as it is, so it is
    /// given up, never reused or freed.
    busy: bool,
}

// SAFETY: a `FutureSlot` holds no value of its own, only memory: the future placed in it is
// owned by the `InSlot` that borrows it mutably (and is `Send`). Nothing can be reached
// through a `&FutureSlot`.
unsafe impl Send for FutureSlot {}
// SAFETY: as above; `&FutureSlot` gives access to nothing.
unsafe impl Sync for FutureSlot {}

impl Default for FutureSlot {
    fn default() -> Self {
        Self::new()
    }
}

impl FutureSlot {
    /// A slot without memory; the first [`put`](Self::put) allocates.
    pub const fn new() -> Self {
        FutureSlot {
            ptr: NonNull::dangling(),
            layout: Layout::new::<()>(),
            busy: false,
        }
    }

    /// Places `future` in the slot, reusing its memory when it is large and aligned enough
    /// (a zero-sized future takes none), and returns it, pinned there, to poll.
    pub fn put<'a, F>(&'a mut self, future: F) -> InSlot<'a, F::Output>
    where
        F: Future + Send + 'a,
    {
        if self.busy {
            // The last future's `InSlot` was leaked without dropping it: give its memory up.
            *self = FutureSlot::new();
        }
        let layout = Layout::new::<F>();
        let ptr: NonNull<F> = if layout.size() == 0 {
            NonNull::dangling()
        } else {
            if layout.size() > self.layout.size() || layout.align() > self.layout.align() {
                self.release();
                // SAFETY: `layout` has a non-zero size.
                let ptr = unsafe { alloc::alloc(layout) };
                self.ptr = NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(layout));
                self.layout = layout;
            }
            self.ptr.cast()
        };
        // SAFETY: `ptr` is valid for writing an `F` and aligned for it: the slot's memory was
        // allocated with a layout at least as large and as aligned (or `F` is zero-sized and
        // `ptr` is dangling and aligned). It holds no value: `busy` is clear.
        unsafe { ptr.as_ptr().write(future) };
        self.busy = true;
        InSlot {
            future: ptr,
            slot: self,
        }
    }

    /// Frees the memory. Only while no future is in it.
    fn release(&mut self) {
        debug_assert!(!self.busy);
        if self.layout.size() > 0 {
            // SAFETY: `ptr` was allocated with `layout`, and is forgotten right after.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
        }
        self.ptr = NonNull::dangling();
        self.layout = Layout::new::<()>();
    }
}

impl Drop for FutureSlot {
    fn drop(&mut self) {
        // A leaked future's memory is never freed (see `busy`).
        if !self.busy {
            self.release();
        }
    }
}

/// A future placed in a [`FutureSlot`]: polls it in place and drops it there.
pub struct InSlot<'a, T> {
    /// The future, in the slot's memory (dangling if zero-sized).
    future: NonNull<dyn Future<Output = T> + Send + 'a>,
    /// Borrowed so that the memory can neither move nor be reused while the future is there.
    slot: &'a mut FutureSlot,
}

// SAFETY: an `InSlot` owns its future, which is `Send`, and borrows the slot mutably.
unsafe impl<T> Send for InSlot<'_, T> {}

impl<T> Future for InSlot<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        // SAFETY: the future is valid (written by `put`, dropped only by `drop`), and pinned:
        // its memory neither moves nor is reused or freed before `drop` drops it, since the
        // slot stays borrowed until then, and a leaked `InSlot` leaves it to the slot for
        // good. No other reference to it exists.
        let future = unsafe { Pin::new_unchecked(self.get_mut().future.as_mut()) };
        future.poll(cx)
    }
}

impl<T> Drop for InSlot<'_, T> {
    fn drop(&mut self) {
        // The value counts as dropped even if its destructor panics: the memory may be reused.
        self.slot.busy = false;
        // SAFETY: the future is valid and dropped only here, once; it is not used after.
        unsafe { std::ptr::drop_in_place(self.future.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its drops.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A future that waits `n` times before it is ready.
    async fn wait(n: usize) {
        for _ in 0..n {
            futures::pending!();
        }
    }

    #[test]
    fn reuses_its_memory_for_futures_that_fit() {
        let mut slot = FutureSlot::new();
        let big = [7u8; 64];
        assert_eq!(slot.put(async move { big[63] }).now_or_never(), Some(7));
        let (ptr, size) = (slot.ptr, slot.layout.size());
        assert!(size >= 64);
        assert_eq!(slot.put(async { 1u64 }).now_or_never(), Some(1));
        assert_eq!(slot.ptr, ptr, "a smaller future reuses the memory");
        let bigger = [1u64; 32];
        let sum = slot
            .put(async move { bigger.iter().sum::<u64>() })
            .now_or_never();
        assert_eq!(sum, Some(32));
        assert!(
            slot.layout.size() >= 256,
            "a larger one gets memory of its size"
        );
        assert_eq!(slot.put(async {}).now_or_never(), Some(()), "zero-sized");
    }

    #[test]
    fn a_future_that_waits_is_polled_in_place_and_dropped_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut slot = FutureSlot::new();
        let counted = Counted(drops.clone());
        let mut placed = slot.put(async move {
            wait(3).await;
            let _keep = &counted;
            5
        });
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut polls = 1;
        while Pin::new(&mut placed).poll(&mut cx).is_pending() {
            polls += 1;
        }
        assert_eq!(polls, 4);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            1,
            "dropped when it completed"
        );
        drop(placed);
        assert_eq!(drops.load(Ordering::Relaxed), 1);

        // Dropped before it completes: its captures are dropped with it.
        let counted = Counted(drops.clone());
        let mut placed = slot.put(async move {
            wait(1).await;
            drop(counted);
        });
        assert!(Pin::new(&mut placed).poll(&mut cx).is_pending());
        drop(placed);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_leaked_future_keeps_its_memory() {
        let mut slot = FutureSlot::new();
        let big = [3u8; 32];
        // Memory larger and as aligned as the next future, which then goes there.
        let large = [0u64; 128];
        assert_eq!(slot.put(async move { large[0] }).now_or_never(), Some(0));
        let (leaked, layout) = (slot.ptr, slot.layout);
        let mut placed = slot.put(async move {
            wait(1).await;
            big[0]
        });
        let waker = futures::task::noop_waker();
        assert!(
            Pin::new(&mut placed)
                .poll(&mut Context::from_waker(&waker))
                .is_pending()
        );
        assert_eq!(
            placed.future.cast::<u8>(),
            leaked,
            "placed in the memory it had"
        );
        std::mem::forget(placed);
        assert!(slot.busy);
        // The next future gets memory of its own: the pinned, undropped one stays as it is.
        assert_eq!(slot.put(async move { big[1] + 1 }).now_or_never(), Some(4));
        assert_ne!(slot.ptr, leaked);
        assert!(!slot.busy);
        // SAFETY (test only): the leaked future holds bytes only and is never used again.
        unsafe { alloc::dealloc(leaked.as_ptr(), layout) };
    }

    #[test]
    fn a_panicking_future_is_dropped_and_the_slot_reused() {
        let mut slot = FutureSlot::new();
        let big = [0u8; 16];
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            slot.put(async move {
                if big[0] == 0 {
                    panic!("inside");
                }
            })
            .now_or_never()
        }));
        assert!(panicked.is_err());
        assert!(!slot.busy);
        assert_eq!(slot.put(async move { big[1] }).now_or_never(), Some(0));
    }
}
