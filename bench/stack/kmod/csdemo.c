// SPDX-License-Identifier: GPL-2.0
/* A small misc-device module to try `callscope stack` on a real kernel
 * module: an ops table (open, read, write, release), a work item, a
 * recursive helper and a call through a function pointer. Built against
 * Debian's kernel headers by bench/stack/kmod.sh; never loaded. */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

static char message[256];
static size_t message_len;

static int depth_walk(int n) {
	char frame[96];

	memset(frame, n, sizeof(frame));
	return n <= 0 ? frame[0] : depth_walk(n - 1) + frame[n & 63];
}

static int (*transform)(int) = depth_walk;

static ssize_t csdemo_read(struct file *f, char __user *buf, size_t len, loff_t *off)
{
	return simple_read_from_buffer(buf, len, off, message, message_len);
}

static ssize_t csdemo_write(struct file *f, const char __user *buf, size_t len, loff_t *off)
{
	char local[128];
	size_t n = min(len, sizeof(local) - 1);

	if (copy_from_user(local, buf, n))
		return -EFAULT;
	local[n] = 0;
	message_len = scnprintf(message, sizeof(message), "%s:%d", local, transform((int)n));
	return len;
}

static int csdemo_open(struct inode *inode, struct file *f) { return 0; }
static int csdemo_release(struct inode *inode, struct file *f) { return 0; }

static const struct file_operations csdemo_fops = {
	.owner = THIS_MODULE,
	.open = csdemo_open,
	.read = csdemo_read,
	.write = csdemo_write,
	.release = csdemo_release,
};

static struct miscdevice csdemo_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "csdemo",
	.fops = &csdemo_fops,
};

static void csdemo_work_fn(struct work_struct *w)
{
	char *buf = kmalloc(64, GFP_KERNEL);

	if (buf) {
		scnprintf(buf, 64, "%d", depth_walk(3));
		kfree(buf);
	}
}
static DECLARE_WORK(csdemo_work, csdemo_work_fn);

static int __init csdemo_init(void)
{
	schedule_work(&csdemo_work);
	return misc_register(&csdemo_dev);
}

static void __exit csdemo_exit(void)
{
	flush_work(&csdemo_work);
	misc_deregister(&csdemo_dev);
}

module_init(csdemo_init);
module_exit(csdemo_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("callscope stack: a module to analyse");
