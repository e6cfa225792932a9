"""mbfmu.fmu"""
