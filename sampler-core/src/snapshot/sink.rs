//! A sink from a closure, for the common case of "send these bytes somewhere".

use postcard::ser_flavors::Flavor;

/// Streams a snapshot into a closure: each chunk the encoder produces (a varint, a
/// COBS block) goes to `write`, which returns `Err(())` if the bytes could not be sent.
/// The way to stream over a UART, RTT or a flash programmer without implementing
/// [`Flavor`]:
///
/// ```
/// # use sampler_core::snapshot::FnSink;
/// let mut sent = 0usize;
/// let profiler = sampler_core::Profiler::<8, 64, 8, 8>::new(1, 1);
/// profiler
///     .write_snapshot_framed(&[], FnSink::new(|bytes: &[u8]| {
///         sent += bytes.len(); // uart.bwrite_all(bytes).map_err(drop)
///         Ok(())
///     }))
///     .unwrap();
/// assert!(sent > 0);
/// ```
///
/// A write error ends the snapshot with [`EncodeError::SinkFailed`](super::EncodeError).
pub struct FnSink<W> {
    write: W,
}

impl<W: FnMut(&[u8]) -> Result<(), ()>> FnSink<W> {
    /// Wrap `write`.
    pub fn new(write: W) -> Self {
        Self { write }
    }
}

impl<W: FnMut(&[u8]) -> Result<(), ()>> Flavor for FnSink<W> {
    type Output = ();

    #[inline]
    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.try_extend(&[byte])
    }

    #[inline]
    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        (self.write)(bytes).map_err(|()| postcard::Error::SerdeSerCustom)
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}
