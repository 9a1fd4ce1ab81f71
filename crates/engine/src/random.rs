//! Seeded random numbers: SplitMix64 streams (Steele, Lea, Flood, OOPSLA 2014), one per
//! (seed, index), so that the same inputs give the same draws bit for bit and each trial (or
//! rank) has a stream of its own whatever else is drawn.

/// A SplitMix64 stream: a 64-bit state, one add and a mix per draw.
pub struct Stream(u64);

/// SplitMix64's step on a state: a well-mixed 64-bit hash of one word (ECMP's hashing).
pub fn mix(x: u64) -> u64 {
    Stream(x).next()
}

impl Stream {
    /// The stream that starts from `state` as it is.
    pub fn from_state(state: u64) -> Stream {
        Stream(state)
    }

    /// The stream of `index` (a trial, a rank) under `seed`.
    pub fn new(seed: u64, index: u64) -> Stream {
        let mut s = Stream(seed ^ 0x6A09_E667_F3BC_C909);
        let first = s.next();
        Stream(first ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponential with rate `rate` (infinite for rate 0).
    pub fn exp(&mut self, rate: f64) -> f64 {
        -self.unit().ln() / rate
    }

    /// Standard normal (Box–Muller, one of the pair).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::Stream;

    #[test]
    fn normal_draws_have_mean_0_and_variance_1_within_their_error() {
        let n = 200_000;
        let mut s = Stream::new(7, 0);
        let x: Vec<f64> = (0..n).map(|_| s.normal()).collect();
        let mean = x.iter().sum::<f64>() / n as f64;
        let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        // Standard errors: 1/√n for the mean, √(2/n) for the variance; 5 of each.
        assert!(mean.abs() < 5.0 / (n as f64).sqrt(), "{mean}");
        assert!((var - 1.0).abs() < 5.0 * (2.0 / n as f64).sqrt(), "{var}");
        // Seeded: the same stream again.
        assert_eq!(Stream::new(7, 0).normal().to_bits(), x[0].to_bits());
    }
}
