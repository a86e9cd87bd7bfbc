//! The per-peer connection cap the HTTP server and the gRPC service share: one client address
//! holds at most its cap of a service's connections (`--max-connections-per-peer`), so one
//! client cannot take the whole connection cap. A place is held from accept to close, as the
//! service's own cap's slot is; past it the connection gets the same answer as past that cap.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex, PoisonError},
};

/// The open connections of each peer of one listener.
#[derive(Debug)]
pub(crate) struct PeerSlots {
    /// The most one address holds; 0 is no cap.
    cap: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection's place among its peer's: freed when dropped.
#[derive(Debug)]
pub(crate) struct PeerPermit {
    /// `None` without a cap: nothing is counted.
    held: Option<(Arc<PeerSlots>, IpAddr)>,
}

impl PeerSlots {
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// A place for a connection of `peer`, or `None` when the peer holds its cap. An IPv4
    /// address mapped into IPv6 counts as itself.
    pub(crate) fn try_acquire(self: &Arc<Self>, peer: IpAddr) -> Option<PeerPermit> {
        if self.cap == 0 {
            return Some(PeerPermit { held: None });
        }
        let peer = peer.to_canonical();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(peer).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(PeerPermit {
            held: Some((self.clone(), peer)),
        })
    }
}

impl Drop for PeerPermit {
    fn drop(&mut self) {
        let Some((slots, peer)) = self.held.take() else {
            return;
        };
        let mut held = slots.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&peer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_holds_its_cap_and_its_places_free_as_connections_close() {
        let slots = PeerSlots::new(2);
        let (one, other): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let first = slots.try_acquire(one).unwrap();
        let _second = slots.try_acquire(one).unwrap();
        assert!(slots.try_acquire(one).is_none());
        let mapped: IpAddr = std::net::Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped().into();
        assert!(slots.try_acquire(mapped).is_none(), "the same address");
        let _elsewhere = slots.try_acquire(other).unwrap();
        drop(first);
        assert!(slots.try_acquire(one).is_some());
        let uncapped = PeerSlots::new(0);
        let many: Vec<_> = (0..100).filter_map(|_| uncapped.try_acquire(one)).collect();
        assert_eq!(many.len(), 100);
        assert!(uncapped.held.lock().unwrap().is_empty());
    }
}
