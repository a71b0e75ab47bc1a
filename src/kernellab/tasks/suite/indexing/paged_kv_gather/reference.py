import torch
import torch.nn as nn

num_blocks = 8192
block_size = 16
num_kv_heads = 8
head_dim = 128
batch_size = 16
blocks_per_seq = 128


class Model(nn.Module):
    """key_cache: [num_blocks, block_size, kv_heads, head_dim]; block_table: [batch, blocks_per_seq] int64.

    Returns key_cache[block_table] as [batch, blocks_per_seq * block_size, kv_heads, head_dim].
    """

    def __init__(self):
        super().__init__()

    def forward(self, key_cache, block_table):
        batch, blocks = block_table.shape
        gathered = key_cache[block_table]  # [batch, blocks, block_size, heads, head_dim]
        return gathered.reshape(batch, blocks * key_cache.shape[1], key_cache.shape[2], key_cache.shape[3])


def get_inputs():
    key_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim)
    block_table = torch.randint(0, num_blocks, (batch_size, blocks_per_seq))
    return [key_cache, block_table]


def get_init_inputs():
    return []
