use super::*;
use language::value::Value;

fn values() -> Vec<Value> {
    vec![
        Value::Real(1.5),
        Value::Int(7),
        Value::Vector(vec![1.0, 2.0, 3.0]),
        Value::RowVector(vec![-1.0, 0.5]),
        Value::Array(vec![Value::Real(0.5), Value::Real(-2.0), Value::Real(4.0)]),
        Value::Matrix {
            rows: 2,
            cols: 3,
            data: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        },
        Value::Matrix {
            rows: 2,
            cols: 2,
            data: vec![1.0, 2.0, 3.0, 4.0],
        },
        Value::Array(vec![
            Value::RowVector(vec![1.0, -1.0]),
            Value::RowVector(vec![0.5, 0.25]),
        ]),
        Value::Array(vec![Value::Int(3), Value::Int(-4)]),
        Value::Tuple(vec![Value::Real(1.0), Value::Int(2)]),
        Value::Tuple(vec![
            Value::Vector(vec![1.0, 2.0]),
            Value::Tuple(vec![Value::Real(3.0), Value::Int(1)]),
        ]),
    ]
}

/// Lane `l`'s version of `v`: the same shape, different numbers.
fn shifted(v: &Value, l: usize) -> Value {
    match v {
        Value::Int(i) => Value::Int(i + l as i64),
        Value::Array(items) => Value::Array(items.iter().map(|i| shifted(i, l)).collect()),
        Value::Tuple(items) => Value::Tuple(items.iter().map(|i| shifted(i, l)).collect()),
        other => runtime::lane::with_data(
            other,
            &mut runtime::lane::flat_reals(other)
                .into_iter()
                .map(|x| x + l as f64),
        ),
    }
}

#[test]
fn lane_values_round_trip_through_every_slot_kind() {
    for v in values() {
        let lanes: Vec<Value> = (0..5).map(|l| shifted(&v, l)).collect();
        let slot = Slot::from_lane_values(lanes.clone());
        let dense = match &slot {
            Slot::Real(_) | Slot::Int(_) => true,
            // A tuple of dense values: its components are dense.
            Slot::Tuple(items) => items
                .iter()
                .all(|i| matches!(&**i, Slot::Real(_) | Slot::Int(_) | Slot::Tuple(_))),
            _ => false,
        };
        assert!(dense, "{v:?} is not stored densely: {slot:?}");
        assert_eq!(
            matches!(slot, Slot::Tuple(_)),
            matches!(v, Value::Tuple(_)),
            "{v:?}"
        );
        for (l, want) in lanes.iter().enumerate() {
            assert_eq!(&slot.lane_value(l), want);
        }
        let shared = Slot::shared(v.clone()).broadcast(5);
        for l in 0..5 {
            assert_eq!(shared.lane_value(l), v);
        }
    }
}

#[test]
fn ragged_lanes_stay_per_lane() {
    let slot = Slot::from_lane_values(vec![
        Value::Vector(vec![1.0]),
        Value::Vector(vec![1.0, 2.0]),
    ]);
    assert!(matches!(slot, Slot::PerLane(_)));
    assert_eq!(slot.lane_value(1), Value::Vector(vec![1.0, 2.0]));
}

#[test]
fn merge_writes_only_the_active_lanes() {
    for v in values() {
        let old: Vec<Value> = (0..6).map(|l| shifted(&v, l)).collect();
        let new: Vec<Value> = (0..6).map(|l| shifted(&v, 10 + l)).collect();
        let active = Lanes::from_indices(6, vec![1, 4]);
        let mut slot = Slot::from_lane_values(old.clone());
        slot.merge(Slot::from_lane_values(new.clone()), &active);
        for l in 0..6 {
            let want = if l == 1 || l == 4 { &new[l] } else { &old[l] };
            assert_eq!(&slot.lane_value(l), want, "lane {l} of {v:?}");
        }
    }
}

#[test]
fn copying_lanes_from_shared_or_dense_sources_keeps_the_others() {
    for v in values() {
        let old: Vec<Value> = (0..6).map(|l| shifted(&v, l)).collect();
        let lanes = Lanes::from_indices(6, vec![0, 3, 5]);
        // From a shared value: every chosen lane gets it.
        let mut slot = Slot::from_lane_values(old.clone());
        let constant = shifted(&v, 7);
        slot.copy_lanes_from(&Slot::shared(constant.clone()), &lanes);
        // Into a shared slot: it becomes per lane where needed.
        let mut from_shared = Slot::shared(v.clone());
        let src = Slot::from_lane_values((0..6).map(|l| shifted(&v, 30 + l)).collect());
        from_shared.copy_lanes_from(&src, &lanes);
        for (l, old) in old.iter().enumerate() {
            let chosen = lanes.indices().contains(&l);
            let want = if chosen { &constant } else { old };
            assert_eq!(&slot.lane_value(l), want, "lane {l} of {v:?}");
            let want = if chosen {
                shifted(&v, 30 + l)
            } else {
                v.clone()
            };
            assert_eq!(from_shared.lane_value(l), want, "lane {l} of {v:?}");
        }
        assert!(
            !matches!(slot, Slot::PerLane(_)),
            "{v:?} lost its dense storage"
        );
    }
}

#[test]
fn gather_then_scatter_restores_and_updates_lanes() {
    for v in values() {
        let old: Vec<Value> = (0..6).map(|l| shifted(&v, l)).collect();
        let lanes = [0, 2, 5];
        let mut slot = Slot::from_lane_values(old.clone());
        let sub = slot.gather(&lanes);
        for (i, &l) in lanes.iter().enumerate() {
            assert_eq!(sub.lane_value(i), old[l]);
        }
        let changed = Slot::from_lane_values((0..3).map(|i| shifted(&v, 20 + i)).collect());
        slot.scatter(&changed, &lanes, 6);
        for (l, old_l) in old.iter().enumerate() {
            let want = match lanes.iter().position(|&x| x == l) {
                Some(i) => shifted(&v, 20 + i),
                None => old_l.clone(),
            };
            assert_eq!(slot.lane_value(l), want);
        }
    }
}

#[test]
fn lane_sets_split_and_retain() {
    let all = Lanes::all(5);
    let (even, odd) = all.split(|l| l % 2 == 0);
    assert_eq!(even.indices(), &[0, 2, 4]);
    assert_eq!(odd.indices(), &[1, 3]);
    let some = Lanes::from_indices(6, vec![1, 2, 5]);
    for (pred, yes, no) in [
        (
            &(|_| true) as &dyn Fn(usize) -> bool,
            &[1, 2, 5][..],
            &[][..],
        ),
        (&|_| false, &[], &[1, 2, 5]),
        (&|l| l > 1, &[2, 5], &[1]),
    ] {
        let (y, n) = some.split(pred);
        assert_eq!((y.indices(), n.indices(), y.z(), n.z()), (yes, no, 6, 6));
    }
    assert_eq!(all.retain(|l| l != 2).indices(), &[0, 1, 3, 4]);
    assert_eq!(Lanes::from_mask(&[true, false, true]).indices(), &[0, 2]);
}

/// `Slot::merge_lanes` (a variable's masked update) gives the written
/// lanes of the new value and the other lanes of the old one, whichever
/// storage it reuses, and never changes a value held elsewhere.
#[test]
fn merge_lanes_writes_only_the_given_lanes_and_leaves_shared_values_alone() {
    let z = 6;
    let subsets: Vec<Vec<usize>> = vec![vec![0], vec![1, 4], vec![0, 2, 3, 5], vec![0, 1, 2, 3, 4]];
    for v in values() {
        let olds: Vec<Value> = (0..z).map(|l| shifted(&v, l)).collect();
        let news: Vec<Value> = (0..z).map(|l| shifted(&v, 10 + l)).collect();
        for subset in &subsets {
            let lanes = Lanes::from_indices(z, subset.clone());
            // Old and new each either held only by the variable / the
            // merge, or also by someone else.
            for (keep_old, keep_new) in [(false, false), (true, false), (false, true), (true, true)]
            {
                let mut old = Arc::new(Slot::from_lane_values(olds.clone()));
                let new = Arc::new(Slot::from_lane_values(news.clone()));
                let old_elsewhere = keep_old.then(|| old.clone());
                let new_elsewhere = keep_new.then(|| new.clone());
                Slot::merge_lanes(&mut old, new, &lanes);
                for l in 0..z {
                    let want = if subset.contains(&l) {
                        &news[l]
                    } else {
                        &olds[l]
                    };
                    assert_eq!(&old.lane_value(l), want, "{v:?} lanes {subset:?} lane {l}");
                }
                if let Some(o) = old_elsewhere {
                    for (l, want) in olds.iter().enumerate() {
                        assert_eq!(&o.lane_value(l), want, "the old value changed");
                    }
                }
                if let Some(n) = new_elsewhere {
                    for (l, want) in news.iter().enumerate() {
                        assert_eq!(&n.lane_value(l), want, "the new value changed");
                    }
                }
            }
        }
    }
}

/// The allocation-free check agrees with building the shape, on every
/// pair of a set of values (scalars, containers, nested, ragged, empty,
/// mixed int/real arrays) and the shapes they have.
#[test]
fn has_dense_shape_agrees_with_dense_shape() {
    let v = |xs: &[f64]| Value::Vector(xs.to_vec());
    let values = vec![
        Value::Int(1),
        Value::Real(1.0),
        v(&[1.0, 2.0]),
        v(&[1.0, 2.0, 3.0]),
        Value::RowVector(vec![1.0, 2.0]),
        Value::Matrix {
            rows: 1,
            cols: 2,
            data: vec![1.0, 2.0],
        },
        Value::Matrix {
            rows: 2,
            cols: 1,
            data: vec![1.0, 2.0],
        },
        Value::Array(vec![]),
        Value::Array(vec![Value::Int(1), Value::Int(2)]),
        Value::Array(vec![Value::Real(1.0), Value::Real(2.0)]),
        Value::Array(vec![Value::Int(1), Value::Real(2.0)]),
        Value::Array(vec![v(&[1.0]), v(&[2.0])]),
        Value::Array(vec![v(&[1.0]), v(&[2.0, 3.0])]),
        Value::Array(vec![
            Value::Array(vec![Value::Int(1)]),
            Value::Array(vec![Value::Int(2)]),
        ]),
        Value::Array(vec![
            Value::Array(vec![Value::Int(1)]),
            Value::Array(vec![]),
        ]),
        Value::Complex(1.0, 2.0),
    ];
    // The values' own shapes, an empty array's, each with both kinds.
    let mut shapes: Vec<Shape> = values
        .iter()
        .filter_map(super::dense_shape)
        .map(|(s, _)| s)
        .collect();
    assert!(shapes.len() >= 10, "most of the values are dense");
    shapes.push(Shape::Array(0, Box::new(Shape::Int)));
    for value in &values {
        for (shape, is_int) in shapes.iter().flat_map(|s| [(s, true), (s, false)]) {
            assert_eq!(
                super::has_dense_shape(value, shape, is_int),
                super::dense_shape(value) == Some((shape.clone(), is_int)),
                "{value:?} against {shape:?} (ints: {is_int})"
            );
        }
    }
}

/// A dense scalar's truth is the interpreter's (`truthy` of the lane's
/// value: non-zero, NaN true) read in place; other slots defer to it.
#[test]
fn scalar_truth_is_the_interpreters_for_dense_scalars_only() {
    let reals = [0.0, -0.0, 1.5, f64::NAN, -2.0];
    let ints = [0, 3, -1, 0, 7];
    let real = Slot::from_lane_values(reals.iter().map(|&x| Value::Real(x)).collect());
    let int = Slot::from_lane_values(ints.iter().map(|&i| Value::Int(i)).collect());
    for slot in [&real, &int] {
        for l in 0..5 {
            let want = runtime::lane::truthy(&slot.lane_value(l)).unwrap();
            assert_eq!(slot.scalar_truth(l), Some(want), "{slot:?} lane {l}");
        }
    }
    let vector = Slot::from_lane_values(vec![Value::Vector(vec![1.0, 0.0]); 2]);
    assert_eq!(vector.scalar_truth(0), None);
    assert_eq!(Slot::shared(Value::Int(1)).scalar_truth(0), None);
}
