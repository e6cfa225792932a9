"""mbfmu.cosim"""
