//! The GP's stored inputs by coordinate, so that the distance loop of a kernel column
//! (`gp::model::kernel_column`) runs over contiguous memory and vectorises.

use std::ops::Range;

use super::categories::Categories;
#[cfg(doc)]
use super::kernel::KernelSpec;

/// Coordinate j of every stored input, in the inputs' order, for each j < dim: the
/// transpose of the GP's inputs, kept beside them and changed with them.
#[derive(Clone, Debug)]
pub(crate) struct Coordinates {
    by_coordinate: Vec<Vec<f64>>,
}

impl Coordinates {
    /// The transpose of `xs`, whose points have length `dim`.
    pub fn new(dim: usize, xs: &[Vec<f64>]) -> Coordinates {
        Coordinates {
            by_coordinate: (0..dim)
                .map(|j| xs.iter().map(|x| x[j]).collect())
                .collect(),
        }
    }

    /// Coordinate `j` (< dim) of every stored input, in the inputs' order.
    pub fn coordinate(&self, j: usize) -> &[f64] {
        &self.by_coordinate[j]
    }

    /// Appends input `x` (of length dim).
    pub fn push(&mut self, x: &[f64]) {
        for (values, &v) in self.by_coordinate.iter_mut().zip(x) {
            values.push(v);
        }
    }

    /// Removes the last input.
    pub fn pop(&mut self) {
        for values in &mut self.by_coordinate {
            values.pop();
        }
    }

    /// Removes input `index` (< the number of inputs).
    pub fn remove(&mut self, index: usize) {
        for values in &mut self.by_coordinate {
            values.remove(index);
        }
    }

    /// Inserts input `x` at `index` (≤ the number of inputs).
    pub fn insert(&mut self, index: usize, x: &[f64]) {
        for (values, &v) in self.by_coordinate.iter_mut().zip(x) {
            values.insert(index, v);
        }
    }

    /// Bytes of heap memory held, from the allocations' capacities.
    pub fn heap_bytes(&self) -> usize {
        self.by_coordinate.capacity() * std::mem::size_of::<Vec<f64>>()
            + self
                .by_coordinate
                .iter()
                .map(|v| v.capacity() * std::mem::size_of::<f64>())
                .sum::<usize>()
    }

    /// For each stored input i of `inputs`, into position i − inputs.start: the squared
    /// distance between `x` and input i over the continuous coordinates, into `squared`,
    /// and the number of categorical coordinates whose choices differ, into `differ`
    /// (only used with categories). The same values as [`KernelSpec::distances`]
    /// (the squares summed in coordinate order from 0), a coordinate at a time.
    #[inline(always)]
    pub fn distances_into(
        &self,
        x: &[f64],
        categories: &Categories,
        inputs: Range<usize>,
        squared: &mut [f64],
        differ: &mut [f64],
    ) {
        let m = inputs.len();
        let squared = &mut squared[..m];
        squared.fill(0.0);
        if !categories.is_empty() {
            differ[..m].fill(0.0);
        }
        for (j, (values, &xj)) in self.by_coordinate.iter().zip(x).enumerate() {
            let values = &values[inputs.clone()];
            if categories.choices(j) > 0 {
                for (count, &v) in differ.iter_mut().zip(values) {
                    if Categories::differ(xj, v) {
                        *count += 1.0;
                    }
                }
            } else {
                for (sum, &v) in squared.iter_mut().zip(values) {
                    let difference = xj - v;
                    *sum += difference * difference;
                }
            }
        }
    }
}
