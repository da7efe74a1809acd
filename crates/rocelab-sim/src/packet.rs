//! Packets, their wire sizes, and the slab that holds them.
//!
//! A RoCEv2 data packet on the wire carries, besides its payload: preamble+SFD (8) and the
//! inter-frame gap (12), Ethernet header (14) and FCS (4), IPv4 (20), UDP (8), the InfiniBand
//! base transport header BTH (12) and the invariant CRC (4): 82 bytes. With a 4096-byte RoCE
//! MTU the best goodput is 4096 / 4178 = 98.04 % of line rate. (RETH on the first packet of an
//! RDMA WRITE is left out: 16 bytes per message.)

use rocelab_model::SimTime;

pub const PREAMBLE_IFG: u32 = 20;
pub const ETH: u32 = 18;
pub const IPV4: u32 = 20;
pub const UDP: u32 = 8;
pub const BTH: u32 = 12;
pub const ICRC: u32 = 4;
/// Bytes on the wire around a data payload.
pub const DATA_OVERHEAD: u32 = PREAMBLE_IFG + ETH + IPV4 + UDP + BTH + ICRC;
/// ACK/NAK: BTH + AETH (4), no payload.
pub const ACK_WIRE: u32 = DATA_OVERHEAD + 4;
/// CNP: BTH + 16 reserved bytes.
pub const CNP_WIRE: u32 = DATA_OVERHEAD + 16;
/// A PFC frame: 64-byte minimum frame + preamble and gap.
pub const PFC_WIRE: u32 = 64 + PREAMBLE_IFG;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Data,
    Ack,
    Nak,
    Cnp,
}

/// ECN codepoints (2 bits of the IP header).
pub const NOT_ECT: u8 = 0;
pub const ECT0: u8 = 2;
pub const CE: u8 = 3;

/// 48 bytes: at fabric scale a million packets can be alive, and each hop touches one.
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// When the packet entered its current egress queue.
    pub enq_time: SimTime,
    pub qp: u32,
    pub psn: u32,
    pub dst: u32,
    pub hash: u32,
    /// Ingress accounting at the current switch: port and priority group.
    pub in_port: u32,
    /// Next packet on the same wire (intrusive list; `u32::MAX` ends it).
    pub next: u32,
    /// Picoseconds from this packet's arrival to the next one's on the same wire, or
    /// `u32::MAX` when the gap does not fit (the arrival then reads the next packet). Kept
    /// here so an arrival schedules the next one without a cache miss on the next packet.
    pub next_gap: u32,
    /// Bytes on the wire (payload + headers; at most 9000 + 98).
    pub wire_bytes: u16,
    pub payload: u16,
    pub kind: Kind,
    /// Switch-side traffic class (from DSCP or PCP, per the switch's trust mode).
    pub class: u8,
    /// 802.1p priority the NIC put on the frame (its own DSCP -> priority map).
    pub pcp: u8,
    pub ecn: u8,
    pub in_prio: u8,
}

/// Packets in a vector with a free list: no allocation per packet in steady state.
#[derive(Default)]
pub struct Slab {
    pkts: Vec<Packet>,
    free: Vec<u32>,
    live: usize,
}

impl Slab {
    pub fn with_capacity(n: usize) -> Self {
        Slab { pkts: Vec::with_capacity(n), free: Vec::with_capacity(n), live: 0 }
    }
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> u32 {
        self.live += 1;
        match self.free.pop() {
            Some(i) => {
                self.pkts[i as usize] = p;
                i
            }
            None => {
                self.pkts.push(p);
                (self.pkts.len() - 1) as u32
            }
        }
    }
    #[inline]
    pub fn free(&mut self, id: u32) {
        self.live -= 1;
        self.free.push(id);
    }
    #[inline]
    pub fn get(&self, id: u32) -> &Packet {
        &self.pkts[id as usize]
    }
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Packet {
        &mut self.pkts[id as usize]
    }
    /// Hints the CPU to load packet `id` into cache: the engine calls it when it learns which
    /// packet it will touch next, well before it does (at fabric scale most packet reads
    /// would otherwise miss to DRAM). A hint only: no effect on results.
    #[inline]
    pub fn prefetch(&self, id: u32) {
        if let Some(p) = self.pkts.get(id as usize) {
            // A 48-byte packet straddles two cache lines at half the slab's slots: load both.
            let first = p as *const Packet as *const u8;
            prefetch_line(first);
            prefetch_line(first.wrapping_add(std::mem::size_of::<Packet>() - 1));
        }
    }
    /// Slots on the free list (what `alloc` hands out next).
    pub fn free_ids(&self) -> &[u32] {
        &self.free
    }
    /// Packets allocated and not yet freed.
    pub fn live(&self) -> usize {
        self.live
    }
    /// Slots ever allocated (the high-water mark).
    pub fn capacity_used(&self) -> usize {
        self.pkts.len()
    }
}

const NONE: u32 = u32::MAX;

/// A FIFO of packets linked through `Packet::next`: an egress queue. A packet is on one list
/// at a time (a queue, then its wire), so the link field is shared. Where a ring buffer per
/// queue costs a cache miss on its slot before the packet itself can be read, the head here
/// sits in the queue's own line.
#[derive(Clone, Copy, Debug)]
pub struct PktFifo {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for PktFifo {
    fn default() -> Self {
        PktFifo { head: NONE, tail: NONE, len: 0 }
    }
}

impl PktFifo {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn front(&self) -> Option<u32> {
        (self.len != 0).then_some(self.head)
    }
    #[inline]
    pub fn push_back(&mut self, slab: &mut Slab, id: u32) {
        slab.get_mut(id).next = NONE;
        if self.len == 0 {
            self.head = id;
        } else {
            slab.get_mut(self.tail).next = id;
        }
        self.tail = id;
        self.len += 1;
    }
    #[inline]
    pub fn pop_front(&mut self, slab: &Slab) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let id = self.head;
        self.len -= 1;
        self.head = if self.len == 0 { NONE } else { slab.get(id).next };
        if self.len == 0 {
            self.tail = NONE;
        }
        Some(id)
    }
    /// The packets, head first.
    pub fn iter<'a>(&self, slab: &'a Slab) -> impl Iterator<Item = u32> + 'a {
        let mut at = self.head;
        (0..self.len).map(move |_| {
            let id = at;
            at = slab.get(id).next;
            id
        })
    }
}

/// Cache prefetch hint for the line holding the start of `r` (no-op off x86-64).
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    prefetch_line(r as *const T as *const u8);
}

/// Cache prefetch hint for the line holding `ptr` (no-op off x86-64).
#[inline(always)]
fn prefetch_line(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it never faults and never reads memory
        // architecturally, whatever the address. SSE is baseline on x86-64.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_stays_small() {
        assert!(std::mem::size_of::<Packet>() <= 48);
    }

    #[test]
    fn data_overhead_is_82_bytes() {
        assert_eq!(DATA_OVERHEAD, 82);
        // 4096-byte MTU goodput
        let eff = 4096.0 / (4096.0 + DATA_OVERHEAD as f64);
        assert!((eff - 0.98037).abs() < 1e-4);
    }
}
