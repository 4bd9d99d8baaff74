//! Executor events as bytes, for a run whose chains are shared over
//! processes (`bat run` under MPI): every rank but the writer encodes its
//! executor's [`Event`]s into messages and the writer decodes them into the
//! collector's channel, so that the collector sees one run of all chains.
//!
//! A stream is one sender's messages in order (MPI keeps the order of the
//! messages between two ranks): the layout of stored draws is sent once,
//! the first time a draw of it is sent, and named by number afterwards.
//! Draws by name are sent as stored numbers ([`DrawValues::into_stored`]),
//! as the collector would store them. Numbers travel as their bits, so the
//! writer stores exactly what the rank computed.

use super::{
    BatchTotals, ChainError, ChainTotals, DrawRecord, DrawValues, Event, LaneWork, SampleStats,
};
use crate::output::{Dtype, VarSpec};
use language::interp::{ErrorKind, RuntimeError};
use language::span::Span;
use std::sync::Arc;

const ITERATION: u8 = 0;
const ADAPTATION: u8 = 1;
const FINISHED: u8 = 2;
const BATCHES: u8 = 3;
const MANY: u8 = 4;
const LAYOUT: u8 = 5;

/// A message that is not a well-formed encoding of events.
#[derive(Debug, thiserror::Error)]
#[error("a malformed message from rank {rank}: {what}")]
pub struct WireError {
    pub rank: usize,
    pub what: String,
}

/// One sender's encoder: events in, message bytes out.
#[derive(Default)]
pub struct Encoder {
    layouts: Vec<Arc<[VarSpec]>>,
    buf: Vec<u8>,
}

impl Encoder {
    /// Appends `event` to the message being built. A draw that cannot be
    /// taken apart as the collector would take it apart is an error.
    pub fn push(&mut self, event: Event) -> Result<(), super::CollectError> {
        match event {
            Event::Many(events) => {
                // Layouts first: they must precede the count.
                let events = events
                    .into_iter()
                    .map(|e| self.stored(e))
                    .collect::<Result<Vec<_>, _>>()?;
                self.buf.push(MANY);
                put_usize(&mut self.buf, events.len());
                for event in &events {
                    self.put_event(event);
                }
            }
            event => {
                let event = self.stored(event)?;
                self.put_event(&event);
            }
        }
        Ok(())
    }

    /// Bytes of the message built so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The message built so far; the next one starts empty (the layouts
    /// sent stay known).
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// `event` with its draw (if any) stored, its layout sent first when new.
    fn stored(&mut self, event: Event) -> Result<Event, super::CollectError> {
        let Event::Iteration { chain, mut record } = event else {
            return Ok(event);
        };
        if let Some(values) = record.values.take() {
            let values = values.into_stored()?;
            if let DrawValues::Stored { layout, .. } = &values
                && self.layout_id(layout).is_none()
            {
                self.buf.push(LAYOUT);
                put_usize(&mut self.buf, self.layouts.len());
                put_usize(&mut self.buf, layout.len());
                for spec in layout.iter() {
                    put_str(&mut self.buf, &spec.name);
                    self.buf.push(match spec.dtype {
                        Dtype::F64 => 0,
                        Dtype::I64 => 1,
                        Dtype::Bool => 2,
                    });
                    put_usize(&mut self.buf, spec.dims.len());
                    for &d in &spec.dims {
                        put_usize(&mut self.buf, d);
                    }
                }
                self.layouts.push(layout.clone());
            }
            record.values = Some(values);
        }
        Ok(Event::Iteration { chain, record })
    }

    fn layout_id(&self, layout: &Arc<[VarSpec]>) -> Option<usize> {
        (self.layouts.iter())
            .position(|l| Arc::ptr_eq(l, layout))
            .or_else(|| self.layouts.iter().position(|l| **l == **layout))
    }

    fn put_event(&mut self, event: &Event) {
        match event {
            Event::Iteration { chain, record } => {
                let b = &mut self.buf;
                b.push(ITERATION);
                put_usize(b, *chain);
                b.push(u8::from(record.warmup));
                let s = &record.stats;
                put_f64(b, s.lp);
                put_f64(b, s.accept_stat);
                put_f64(b, s.step_size);
                put_u64(b, s.tree_depth as u64);
                put_u64(b, s.n_leapfrog as u64);
                b.push(u8::from(s.divergent));
                put_f64(b, s.energy);
                match &record.values {
                    Some(DrawValues::Stored { layout, numbers }) => {
                        let id = self.layout_id(layout).unwrap_or(usize::MAX);
                        let b = &mut self.buf;
                        b.push(1);
                        put_usize(b, id);
                        put_f64s(b, numbers);
                    }
                    // `stored` stored every draw.
                    _ => self.buf.push(0),
                }
                let b = &mut self.buf;
                put_usize(b, record.printed.len());
                for line in &record.printed {
                    put_str(b, line);
                }
            }
            Event::Adaptation {
                chain,
                step_size,
                inv_metric,
            } => {
                let b = &mut self.buf;
                b.push(ADAPTATION);
                put_usize(b, *chain);
                put_f64(b, *step_size);
                put_f64s(b, inv_metric);
            }
            Event::Finished { chain, result } => {
                let b = &mut self.buf;
                b.push(FINISHED);
                put_usize(b, *chain);
                match result {
                    Ok(totals) => {
                        b.push(0);
                        put_u64(b, totals.gradient_evaluations);
                    }
                    Err(e) => {
                        b.push(1);
                        put_usize(b, e.chain);
                        put_error(b, &e.error);
                        match &e.last_log_density_error {
                            Some(last) => {
                                b.push(1);
                                put_error(b, last);
                            }
                            None => b.push(0),
                        }
                        b.push(u8::from(e.interrupted));
                    }
                }
            }
            Event::Batches(t) => {
                let b = &mut self.buf;
                b.push(BATCHES);
                for x in [
                    t.calls,
                    t.lanes,
                    t.slots,
                    t.gradient_blocks.slots,
                    t.gradient_blocks.useful,
                ] {
                    put_u64(b, x);
                }
            }
            Event::Many(events) => {
                self.buf.push(MANY);
                put_usize(&mut self.buf, events.len());
                for event in events {
                    self.put_event(event);
                }
            }
        }
    }
}

/// One sender's decoder: message bytes in, events out.
pub struct Decoder {
    rank: usize,
    layouts: Vec<Arc<[VarSpec]>>,
}

impl Decoder {
    /// The decoder of the messages of `rank` (named in its errors).
    pub fn new(rank: usize) -> Decoder {
        Decoder {
            rank,
            layouts: Vec::new(),
        }
    }

    /// The events of one message, in order.
    pub fn decode(&mut self, message: &[u8]) -> Result<Vec<Event>, WireError> {
        let mut r = Reader {
            bytes: message,
            at: 0,
            rank: self.rank,
        };
        let mut events = Vec::new();
        while !r.done() {
            if let Some(event) = self.event(&mut r)? {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// The next event, or None for a layout (remembered).
    fn event(&mut self, r: &mut Reader<'_>) -> Result<Option<Event>, WireError> {
        let tag = r.u8()?;
        Ok(Some(match tag {
            LAYOUT => {
                let id = r.usize()?;
                if id != self.layouts.len() {
                    return Err(r.error(format!("layout {id} out of order")));
                }
                let n = r.len(1)?;
                let mut specs = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = r.string()?;
                    let dtype = match r.u8()? {
                        0 => Dtype::F64,
                        1 => Dtype::I64,
                        2 => Dtype::Bool,
                        other => return Err(r.error(format!("dtype {other}"))),
                    };
                    let n_dims = r.len(8)?;
                    let dims = (0..n_dims).map(|_| r.usize()).collect::<Result<_, _>>()?;
                    specs.push(VarSpec { name, dims, dtype });
                }
                self.layouts.push(specs.into());
                return Ok(None);
            }
            ITERATION => {
                let chain = r.usize()?;
                let warmup = r.bool()?;
                let stats = SampleStats {
                    lp: r.f64()?,
                    accept_stat: r.f64()?,
                    step_size: r.f64()?,
                    tree_depth: r.u64()? as i64,
                    n_leapfrog: r.u64()? as i64,
                    divergent: r.bool()?,
                    energy: r.f64()?,
                };
                let values = match r.u8()? {
                    0 => None,
                    1 => {
                        let id = r.usize()?;
                        let layout = (self.layouts.get(id).cloned())
                            .ok_or_else(|| r.error(format!("unknown layout {id}")))?;
                        let numbers = r.f64s()?;
                        Some(DrawValues::Stored { layout, numbers })
                    }
                    other => return Err(r.error(format!("values tag {other}"))),
                };
                let n = r.len(8)?;
                let printed = (0..n).map(|_| r.string()).collect::<Result<_, _>>()?;
                Event::Iteration {
                    chain,
                    record: DrawRecord {
                        warmup,
                        stats,
                        values,
                        printed,
                        point: None,
                    },
                }
            }
            ADAPTATION => Event::Adaptation {
                chain: r.usize()?,
                step_size: r.f64()?,
                inv_metric: r.f64s()?,
            },
            FINISHED => {
                let chain = r.usize()?;
                let result = match r.u8()? {
                    0 => Ok(ChainTotals {
                        gradient_evaluations: r.u64()?,
                    }),
                    1 => {
                        let error_chain = r.usize()?;
                        let error = r.error_value()?;
                        let last_log_density_error = match r.u8()? {
                            0 => None,
                            _ => Some(r.error_value()?),
                        };
                        Err(ChainError {
                            chain: error_chain,
                            error,
                            last_log_density_error,
                            interrupted: r.bool()?,
                        })
                    }
                    other => return Err(r.error(format!("result tag {other}"))),
                };
                Event::Finished { chain, result }
            }
            BATCHES => Event::Batches(BatchTotals {
                calls: r.u64()?,
                lanes: r.u64()?,
                slots: r.u64()?,
                gradient_blocks: LaneWork {
                    slots: r.u64()?,
                    useful: r.u64()?,
                },
            }),
            MANY => {
                let n = r.len(1)?;
                let mut events = Vec::with_capacity(n);
                for _ in 0..n {
                    match self.event(r)? {
                        Some(event) => events.push(event),
                        None => return Err(r.error("a layout inside many events".into())),
                    }
                }
                Event::Many(events)
            }
            other => return Err(r.error(format!("event tag {other}"))),
        }))
    }
}

fn put_u64(b: &mut Vec<u8>, x: u64) {
    b.extend_from_slice(&x.to_le_bytes());
}

fn put_usize(b: &mut Vec<u8>, x: usize) {
    put_u64(b, x as u64);
}

fn put_f64(b: &mut Vec<u8>, x: f64) {
    put_u64(b, x.to_bits());
}

fn put_f64s(b: &mut Vec<u8>, xs: &[f64]) {
    put_usize(b, xs.len());
    b.reserve(8 * xs.len());
    for &x in xs {
        put_f64(b, x);
    }
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_usize(b, s.len());
    b.extend_from_slice(s.as_bytes());
}

fn put_error(b: &mut Vec<u8>, e: &RuntimeError) {
    b.push(match e.kind {
        ErrorKind::Data => 0,
        ErrorKind::Rejection => 1,
        ErrorKind::IndexOutOfRange => 2,
        ErrorKind::Constraint => 3,
        ErrorKind::Fatal => 4,
        ErrorKind::Unsupported => 5,
    });
    put_str(b, &e.message);
    match e.span {
        Some(span) => {
            b.push(1);
            put_u64(b, span.start.into());
            put_u64(b, span.end.into());
        }
        None => b.push(0),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    rank: usize,
}

impl Reader<'_> {
    fn error(&self, what: String) -> WireError {
        WireError {
            rank: self.rank,
            what: format!("{what} at byte {}", self.at),
        }
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&[u8], WireError> {
        let end = (self.at.checked_add(n))
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.error(format!("{n} bytes past the end")))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    fn bool(&mut self) -> Result<bool, WireError> {
        Ok(self.u8()? != 0)
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])))
    }

    fn usize(&mut self) -> Result<usize, WireError> {
        let x = self.u64()?;
        usize::try_from(x).map_err(|_| self.error(format!("{x} is too large")))
    }

    /// A count of items of at least `item_bytes` each: no more than the
    /// message can hold.
    fn len(&mut self, item_bytes: usize) -> Result<usize, WireError> {
        let n = self.usize()?;
        if n.saturating_mul(item_bytes) > self.bytes.len() - self.at {
            return Err(self.error(format!("{n} items past the end")));
        }
        Ok(n)
    }

    fn f64(&mut self) -> Result<f64, WireError> {
        Ok(f64::from_bits(self.u64()?))
    }

    fn f64s(&mut self) -> Result<Vec<f64>, WireError> {
        let n = self.len(8)?;
        (0..n).map(|_| self.f64()).collect()
    }

    fn string(&mut self) -> Result<String, WireError> {
        let n = self.len(1)?;
        let bytes = self.take(n)?.to_vec();
        String::from_utf8(bytes).map_err(|_| self.error("a string not UTF-8".into()))
    }

    fn error_value(&mut self) -> Result<RuntimeError, WireError> {
        let kind = match self.u8()? {
            0 => ErrorKind::Data,
            1 => ErrorKind::Rejection,
            2 => ErrorKind::IndexOutOfRange,
            3 => ErrorKind::Constraint,
            4 => ErrorKind::Fatal,
            5 => ErrorKind::Unsupported,
            other => return Err(self.error(format!("error kind {other}"))),
        };
        let message = self.string()?;
        let span = match self.u8()? {
            0 => None,
            _ => Some(Span {
                start: self.u64()? as u32,
                end: self.u64()? as u32,
            }),
        };
        Ok(RuntimeError {
            kind,
            message,
            span,
        })
    }
}

/// The chains of rank `rank` of `ranks` when `n_chains` chains are shared
/// out: contiguous ranges in rank order, the first `n_chains % ranks`
/// ranks one chain more than the others.
pub fn share(n_chains: usize, ranks: usize, rank: usize) -> std::ops::Range<usize> {
    let ranks = ranks.max(1);
    let (base, extra) = (n_chains / ranks, n_chains % ranks);
    let start = rank * base + rank.min(extra);
    let len = base + usize::from(rank < extra);
    start.min(n_chains)..(start + len).min(n_chains)
}

#[cfg(test)]
mod tests {
    use super::*;
    use language::value::Value;

    fn stats(x: f64) -> SampleStats {
        SampleStats {
            lp: -x,
            accept_stat: 0.25,
            step_size: f64::MIN_POSITIVE,
            tree_depth: 3,
            n_leapfrog: -7,
            divergent: true,
            energy: f64::NAN,
        }
    }

    /// Every kind of event comes back equal (numbers bit for bit: a NaN's
    /// payload, −0, subnormals), over several messages of one stream, a
    /// layout sent once and reused.
    #[test]
    fn events_come_back_bit_for_bit() {
        let layout: Arc<[VarSpec]> = vec![
            VarSpec::real("mu", &[]),
            VarSpec::int("k", &[2]),
            VarSpec::boolean("b", &[1, 1]),
        ]
        .into();
        let odd = [f64::from_bits(0x7ff8_0000_dead_beef), -0.0, 5e-324, 1.5];
        let iteration = |chain, numbers: &[f64]| Event::Iteration {
            chain,
            record: DrawRecord {
                warmup: chain % 2 == 0,
                stats: stats(chain as f64),
                values: Some(DrawValues::Stored {
                    layout: layout.clone(),
                    numbers: numbers.to_vec(),
                }),
                printed: vec!["x = 1".into(), "ünï".into()],
                point: None,
            },
        };
        let failed = ChainError {
            chain: 9,
            error: RuntimeError {
                kind: ErrorKind::Rejection,
                message: "bad".into(),
                span: Some(Span { start: 3, end: 8 }),
            },
            last_log_density_error: Some(RuntimeError::fatal("worse")),
            interrupted: true,
        };
        let first = vec![
            iteration(4, &odd),
            Event::Many(vec![
                iteration(5, &[1.0, 2.0, 3.0, 4.0]),
                Event::Adaptation {
                    chain: 5,
                    step_size: 0.5,
                    inv_metric: odd.to_vec(),
                },
            ]),
        ];
        let second = vec![
            Event::Iteration {
                chain: 6,
                record: DrawRecord {
                    warmup: false,
                    stats: stats(1.0),
                    values: None,
                    printed: Vec::new(),
                    point: None,
                },
            },
            iteration(7, &odd),
            Event::Finished {
                chain: 7,
                result: Ok(ChainTotals {
                    gradient_evaluations: u64::MAX,
                }),
            },
            Event::Finished {
                chain: 9,
                result: Err(failed),
            },
            Event::Batches(BatchTotals {
                calls: 1,
                lanes: 2,
                slots: 3,
                gradient_blocks: LaneWork {
                    slots: 4,
                    useful: 5,
                },
            }),
        ];
        let mut encoder = Encoder::default();
        let mut decoder = Decoder::new(1);
        let mut layouts_sent = 0;
        for events in [&first, &second] {
            for event in events.iter() {
                encoder.push(event.clone()).unwrap();
            }
            let message = encoder.take();
            layouts_sent += message.iter().filter(|&&b| b == LAYOUT).count().min(1);
            let back = decoder.decode(&message).unwrap();
            assert_eq!(back.len(), events.len());
            for (a, b) in back.iter().zip(events.iter()) {
                // Bit for bit: compare the debug text of the bits.
                assert_eq!(format!("{:?}", bits(a)), format!("{:?}", bits(b)));
            }
        }
        assert!(layouts_sent >= 1);
        assert_eq!(decoder.layouts.len(), 1, "the layout is sent once");
    }

    /// The numbers of an event as bits, the rest as debug text.
    fn bits(event: &Event) -> (String, Vec<u64>) {
        let mut numbers = Vec::new();
        let mut e = event.clone();
        if let Event::Iteration { record, .. } = &mut e {
            numbers.extend([record.stats.lp, record.stats.energy].map(f64::to_bits));
            record.stats.energy = 0.0;
            if let Some(DrawValues::Stored { numbers: n, .. }) = &mut record.values {
                numbers.extend(n.iter().map(|x| x.to_bits()));
                n.clear();
            }
        }
        if let Event::Many(events) = &e {
            let inner: Vec<_> = events.iter().map(bits).collect();
            return (format!("{inner:?}"), numbers);
        }
        if let Event::Adaptation { inv_metric, .. } = &mut e {
            numbers.extend(inv_metric.iter().map(|x| x.to_bits()));
            inv_metric.clear();
        }
        (format!("{e:?}"), numbers)
    }

    /// A draw by name arrives as the numbers the collector would store.
    #[test]
    fn named_draws_arrive_stored() {
        let named = DrawValues::Named(vec![
            ("a".into(), Value::Real(2.5)),
            ("v".into(), Value::Vector(vec![1.0, -3.0])),
        ]);
        let event = Event::Iteration {
            chain: 0,
            record: DrawRecord {
                warmup: false,
                stats: stats(0.0),
                values: Some(named.clone()),
                printed: Vec::new(),
                point: None,
            },
        };
        let mut encoder = Encoder::default();
        encoder.push(event).unwrap();
        let back = Decoder::new(2).decode(&encoder.take()).unwrap();
        let Event::Iteration { record, .. } = &back[0] else {
            panic!("{back:?}")
        };
        assert_eq!(record.values, Some(named.into_stored().unwrap()));
    }

    /// A truncated or corrupted message is an error naming its rank, never
    /// a panic.
    #[test]
    fn malformed_messages_are_errors() {
        let mut encoder = Encoder::default();
        encoder
            .push(Event::Adaptation {
                chain: 1,
                step_size: 0.1,
                inv_metric: vec![1.0; 4],
            })
            .unwrap();
        let message = encoder.take();
        for cut in 0..message.len() {
            if cut == 0 {
                continue;
            }
            let error = Decoder::new(3).decode(&message[..cut]).unwrap_err();
            assert!(error.to_string().contains("from rank 3"), "{error}");
        }
        let mut bad = message.clone();
        bad[0] = 99;
        assert!(Decoder::new(3).decode(&bad).is_err());
        // A count far beyond the message.
        let mut huge = message;
        huge[9 + 8..9 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Decoder::new(3).decode(&huge).is_err());
    }

    /// Shares cover every chain once, in order, sizes differing by at
    /// most one, for ranks that divide the chains or not (and more ranks
    /// than chains).
    #[test]
    fn shares_cover_every_chain_once() {
        for n_chains in [0, 1, 2, 7, 10, 1000] {
            for ranks in 1..=12 {
                let shares: Vec<_> = (0..ranks).map(|r| share(n_chains, ranks, r)).collect();
                let all: Vec<usize> = shares.iter().flat_map(|s| s.clone()).collect();
                assert_eq!(all, (0..n_chains).collect::<Vec<_>>());
                let sizes: Vec<usize> = shares.iter().map(|s| s.len()).collect();
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= 1, "{n_chains} over {ranks}: {sizes:?}");
            }
        }
        assert_eq!(share(10, 3, 0), 0..4);
        assert_eq!(share(10, 3, 1), 4..7);
        assert_eq!(share(10, 3, 2), 7..10);
    }
}
