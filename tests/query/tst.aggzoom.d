/*
 * aggzoom: a quantization's bars are scaled to its largest bucket (about
 * 95 % of the width), not to the sum of its buckets; set here while the
 * script runs, so the second printa() zooms and the first does not.
 */
#pragma D option quiet

BEGIN
{
	@q = quantize(1);
	@q = quantize(2);
	@q = quantize(2);
	@q = quantize(8);
	@q = quantize(8);
	@q = quantize(8);
	@q = quantize(8);
	printa(@q);
	setopt("aggzoom");
	printa(@q);
	exit(0);
}
