//! One direction's buffer: a fixed capacity, allocated once per connection slot and reused
//! by the connections that follow, so memory per connection is bounded whatever the peers
//! send. Bytes are read in at the end and written out from the start.

pub(crate) struct Buffer {
    /// Zeroed by the allocator on demand: pages a connection never fills cost no memory.
    bytes: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Buffer {
    pub fn new(capacity_bytes: usize) -> Self {
        Buffer { bytes: vec![0; capacity_bytes.max(1)].into_boxed_slice(), start: 0, end: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Whether a read could add bytes (after moving what is left to the front).
    pub fn has_room(&self) -> bool {
        self.end - self.start < self.bytes.len()
    }

    /// Where the next read goes: all the room there is.
    pub fn room(&mut self) -> &mut [u8] {
        if self.end == self.bytes.len() && self.start > 0 {
            self.bytes.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.bytes[self.end..]
    }

    /// `n` bytes were read into [`Self::room`]; returns them.
    pub fn filled(&mut self, n: usize) -> &[u8] {
        let from = self.end;
        self.end += n;
        &self.bytes[from..self.end]
    }

    /// What is waiting to be written.
    pub fn data(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    /// `n` bytes of [`Self::data`] were written.
    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Empty, for the next connection in this slot.
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_drains_and_moves_what_is_left_to_the_front() {
        let mut buffer = Buffer::new(8);
        assert!(buffer.is_empty() && buffer.has_room());
        buffer.room()[..6].copy_from_slice(b"abcdef");
        assert_eq!(buffer.filled(6), b"abcdef");
        buffer.consume(4);
        assert_eq!(buffer.data(), b"ef");
        assert_eq!(buffer.room().len(), 2, "room at the end first");
        buffer.room()[..2].copy_from_slice(b"gh");
        buffer.filled(2);
        assert!(buffer.has_room());
        assert_eq!(buffer.room().len(), 4, "moved to the front once the end is reached");
        assert_eq!(buffer.data(), b"efgh");
        buffer.room()[..4].copy_from_slice(b"ijkl");
        buffer.filled(4);
        assert!(!buffer.has_room());
        buffer.consume(8);
        assert!(buffer.is_empty());
        assert_eq!(buffer.room().len(), 8);
    }
}
